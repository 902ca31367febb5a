"""Two real runs of the tiny transformer, the second with tanh-approximate gelu in layer 1."""
from __future__ import annotations

import json
from pathlib import Path

from openpyxl import load_workbook

from tests.compare.compare_helpers import PLANTED_API, PLANTED_MODULE, msprobe, read_csv
from tests.support.cli import assert_one_line_error
from msprobe.schema.compare_result import HEADERS


def _summary(out: Path) -> dict:
    return json.loads((out / "compare_summary.json").read_text())


def test_statistics_planted_gelu_is_the_first_divergence(tiny_dumps, tmp_path):
    out = tmp_path / "out"
    done = msprobe("compare", "-tp", tiny_dumps["statistics_planted"], "-gp", tiny_dumps["statistics"], "-o", out)
    assert done.returncode == 1, done.stderr
    assert f"first divergence at {PLANTED_API}" in done.stdout
    assert PLANTED_MODULE in done.stdout and "approximate" in done.stdout
    summary = _summary(out)
    found = summary["first_divergence"]
    assert (found["entry"], found["kind"]) == (PLANTED_API, "origin")
    assert found["module_chain"][0] == PLANTED_MODULE
    assert found["input_error"] == 0.0 and found["output_error"] > 1e-5
    assert any("dump_tiny.py" in frame for frame in found["stack"])
    rank = summary["ranks"][0]
    rows = read_csv(Path(rank["files"]["csv"]))
    assert list(rows[0].keys()) == HEADERS["statistics"]
    by_name = {r["NPU Name"]: r for r in rows}
    gelu_in, gelu_out = by_name[PLANTED_API + ".input.0"], by_name[PLANTED_API + ".output.0"]
    assert (gelu_in["Result"], gelu_in["Max diff"]) == ("pass", "0")
    assert gelu_out["Result"] == "warning" and gelu_out["NormRelativeErr"].endswith("%")
    earlier = rows[: rows.index(gelu_in)]
    assert earlier and all(r["Result"] == "pass" for r in earlier)


def test_xlsx_is_styled_and_matches_the_csv(tiny_dumps, tmp_path):
    out = tmp_path / "out"
    msprobe("compare", "-tp", tiny_dumps["statistics_planted"], "-gp", tiny_dumps["statistics"], "-o", out)
    rank = _summary(out)["ranks"][0]
    rows = read_csv(Path(rank["files"]["csv"]))
    sheet = load_workbook(rank["files"]["xlsx"]).active
    assert sheet.freeze_panes == "A2" and sheet.auto_filter.ref.startswith("A1:")
    header = [c.value for c in sheet[1]]
    assert header == HEADERS["statistics"]
    result_col = header.index("Result")
    colours = {}
    for row in sheet.iter_rows(min_row=2):
        colours.setdefault(row[result_col].value, set()).add(row[0].fill.start_color.rgb)
    assert colours["warning"] == {"00FFEB9C"} and colours["pass"] == {"00000000"}
    assert sheet.max_row == len(rows) + 1


def test_tensor_mode_names_the_same_api(tiny_dumps, tmp_path):
    out = tmp_path / "out"
    done = msprobe("compare", "-tp", tiny_dumps["tensor_planted"], "-gp", tiny_dumps["tensor"], "-o", out, "--json")
    assert done.returncode == 1, done.stderr
    summary = json.loads(done.stdout)
    assert summary["first_divergence"]["entry"] == PLANTED_API
    rows = {r["NPU Name"]: r for r in read_csv(Path(summary["ranks"][0]["files"]["csv"]))}
    gelu_out = rows[PLANTED_API + ".output.0"]
    assert float(gelu_out["Cosine"]) < 1.0 or float(gelu_out["MaxAbsErr"]) > 1e-5
    assert rows[PLANTED_API + ".input.0"]["MaxAbsErr"] == "0.0"
    assert gelu_out["Data_name"] == str([PLANTED_API + ".output.0.pt"] * 2)


def test_md5_compares_crc_and_refuses_statistics(tiny_dumps, tmp_path):
    done = msprobe("compare", "-tp", tiny_dumps["md5_planted"], "-gp", tiny_dumps["md5"], "-o", tmp_path / "a")
    assert done.returncode == 1, done.stderr
    rows = {r["NPU Name"]: r for r in read_csv(next((tmp_path / "a").glob("compare_result_*.csv")))}
    assert rows[PLANTED_API + ".output.0"]["Result"] == "Different"
    assert rows[PLANTED_API + ".input.0"]["Result"] == "pass"
    assert list(rows[PLANTED_API + ".input.0"].keys()) == HEADERS["md5"]
    mixed = msprobe("compare", "-tp", tiny_dumps["md5"], "-gp", tiny_dumps["statistics"], "-o", tmp_path / "b")
    assert assert_one_line_error(mixed).startswith("msprobe: error: task mismatch")


def test_tensor_against_statistics_compares_statistics_and_says_so(tiny_dumps, tmp_path):
    done = msprobe("compare", "-tp", tiny_dumps["tensor_planted"], "-gp", tiny_dumps["statistics"],
                   "-o", tmp_path / "o")
    assert done.returncode == 1
    assert "compared by statistics" in done.stdout
    assert _summary(tmp_path / "o")["first_divergence"]["entry"] == PLANTED_API


def test_identical_runs_pass_and_output_is_never_overwritten(tiny_dumps, tmp_path):
    out = tmp_path / "out"
    for _ in range(2):
        done = msprobe("compare", "-tp", tiny_dumps["statistics"], "-gp", tiny_dumps["statistics"], "-o", out,
                       "--no-xlsx")
        assert done.returncode == 0, done.stderr
        assert "No divergence" in done.stdout
    assert len(list(out.glob("compare_result_rank_*.csv"))) == 2
    assert len(list(out.glob("compare_summary*.json"))) == 2
