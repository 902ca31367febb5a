"""The --html page in a real headless Chromium (Debian's chromium + chromium-driver, driven by selenium)."""
from __future__ import annotations

import json
import shutil

from tests.compare.compare_helpers import PLANTED_API, msprobe
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
