"""The --html page in a real headless Chromium (Debian's chromium + chromium-driver, driven by selenium): it shows
the first divergence, and a dump whose names are markup or script shows them as text, running nothing."""
from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from tests.compare.compare_helpers import PLANTED_API, msprobe, read_csv, renamed_copy
from tests.support.ci import unavailable

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def _browser():
    if not (CHROMIUM and DRIVER):
        message = "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
        unavailable(message)
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(argument)
    options.binary_location = CHROMIUM
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    options.set_capability("unhandledPromptBehavior", "ignore")  # an alert stays up, for the test to see
    return webdriver.Chrome(service=Service(DRIVER), options=options)


def test_page_loads_clean_and_marks_the_first_divergence(tiny_dumps, tmp_path):
    page = tmp_path / "report.html"
    done = msprobe("compare", "-tp", tiny_dumps["statistics_planted"], "-gp", tiny_dumps["statistics"],
                   "-o", tmp_path / "out", "--no-xlsx", "--html", page)
    assert done.returncode == 1, done.stderr
    text = page.read_text()
    assert "http://" not in text.replace("http://www.w3.org/2000/svg", "") and "https://" not in text
    driver = _browser()
    try:
        driver.get(page.as_uri())
        marker = driver.find_element("id", "first-divergence")
        assert marker.get_attribute("data-entry") == PLANTED_API
        index = int(marker.get_attribute("data-index"))
        rows = driver.find_elements("css selector", "#entries tr.entry")
        assert rows[index].get_attribute("data-entry") == PLANTED_API
        assert "first" in rows[index].get_attribute("class")
        assert len(driver.find_elements("css selector", "#plot circle")) > 50
        assert driver.find_elements("css selector", "#tree li span")
        rows[0].click()
        detail = driver.find_element("id", "detail-table").text
        assert "input.0" in detail and "output.0" in detail
        severe = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        assert severe == []
    finally:
        driver.quit()
    summary = json.loads((tmp_path / "out" / "compare_summary.json").read_text())
    assert summary["first_divergence"]["entry"] == PLANTED_API


# what a dump from someone else's machine may name things: each would run or load something if taken as markup
HOSTILE_API = "<script>alert(1)</script>"
HOSTILE = {"gelu": HOSTILE_API, "mlp": '"><img src=x onerror=alert(2)>', "attn": "<!--<script>",
           "ln1": "javascript:alert(3)", "fc1": "<svg onload=alert(4)>" + "x" * 5000}
HOSTILE_VALUE = "</script><img src=http://127.0.0.1:9/leak onerror=alert(5)>"
INERT = """
const attrs = [];
for (const node of document.querySelectorAll("*")) {
  for (const a of node.attributes) {
    if (a.name.startsWith("on") || ["href", "src", "xlink:href", "action", "srcdoc"].includes(a.name)) attrs.push(a.name);
  }
}
return {title: document.title, scripts: document.scripts.length, images: document.images.length,
        embeds: document.querySelectorAll("a, iframe, object, embed, img, link, meta[http-equiv]").length,
        attrs: attrs, fetched: performance.getEntriesByType("resource").map(r => r.name)};
"""


def _no_alert(driver) -> None:
    from selenium.common.exceptions import NoAlertPresentException

    try:
        text = driver.switch_to.alert.text
    except NoAlertPresentException:
        return
    raise AssertionError(f"the page ran an alert: {text!r}")


def test_hostile_names_are_shown_as_text_and_nothing_runs(tiny_dumps, tmp_path):
    # the target's own folder name is shown on the page too
    target = renamed_copy(tiny_dumps["statistics_planted"], tmp_path / "<!--<script>dump", HOSTILE,
                          {f"Functional.{HOSTILE_API}.1.forward.input.approximate": HOSTILE_VALUE})
    golden = renamed_copy(tiny_dumps["statistics"], tmp_path / "golden", HOSTILE)
    page = tmp_path / "report.html"
    done = msprobe("compare", "-tp", target, "-gp", golden, "-o", tmp_path / "out", "--no-xlsx", "--html", page)
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads((tmp_path / "out" / "compare_summary.json").read_text())
    entry = f"Functional.{HOSTILE_API}.1.forward"
    assert summary["first_divergence"]["entry"] == entry
    driver = _browser()
    try:
        driver.get(page.as_uri())
        time.sleep(1)  # an image's onerror, had one been made, fires after its failed load
        _no_alert(driver)
        seen = driver.execute_script(INERT)
        assert seen == {"title": "msprobe compare", "scripts": 2, "images": 0, "embeds": 0, "attrs": [],
                        "fetched": []}, seen
        # and the page is whole: verdict, sources, every entry, the first divergence shown with its hostile value
        assert driver.find_element("id", "verdict").text == f"First divergence: {entry} on rank (origin)."
        assert str(target) in driver.find_element("id", "sources").text
        rows = driver.find_elements("css selector", "#entries tr.entry")
        assert len(rows) == summary["ranks"][0]["entries"]
        names = {row.get_attribute("data-entry") for row in rows}
        assert {entry, f"Module.blocks.1.{HOSTILE['mlp']}.MLP.forward.0",
                f"Module.blocks.0.{HOSTILE['attn']}.Attention.forward.0"} <= names
        assert any(HOSTILE["fc1"] in name for name in names)  # the long name, whole
        assert driver.find_element("id", "first-divergence").get_attribute("data-entry") == entry
        assert HOSTILE_VALUE in driver.find_element("id", "detail-table").text
        assert driver.find_elements("css selector", "#tree li span")
        rows[-1].click()
        _no_alert(driver)
        assert driver.execute_script(INERT)["attrs"] == []
        severe = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
        assert severe == []
    finally:
        driver.quit()
    text = page.read_text(encoding="utf-8")  # the names are in the file only as escaped JSON
    assert text.count("<script") == 2 and "<img" not in text and "<svg onload" not in text and "<!--" not in text
    csv_rows = read_csv(Path(summary["ranks"][0]["files"]["csv"]))
    assert any(r["NPU Name"] == entry + ".input.approximate" for r in csv_rows)
