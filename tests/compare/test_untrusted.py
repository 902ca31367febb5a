"""Dumps from someone else's machine (issue 40): their strings stay text in the CSV and the workbook, and a tensor
comparison whose tensor files are missing, cut short, outside the dump or holding code is an error naming the
file (exit 2, one line, no -o folder left), not a pass; ``--statistics`` compares such dumps by statistics. Names
holding terminal escape codes are printed escaped; a 401-digit statistic compares as inf."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import torch
from openpyxl import load_workbook
from openpyxl.utils.escape import unescape

from tests.compare.compare_helpers import PLANTED_API, msprobe, read_csv, renamed_copy
from tests.support.cli import MSPROBE, assert_one_line_error
from tests.support.terminal import HOSTILE_ESCAPES, HOSTILE_SHOWN, TERMINAL_CONTROL, printed

# what a spreadsheet would run, or read as a formula, if the cell were not neutralised
FORMULAS = {"link": '=HYPERLINK("http://127.0.0.1:9/leak","click")', "sum": "=1+1", "plus": "+1+1",
            "at": "@SUM(A1:A2)", "minus": "-2+3", "tab": "\t=1+1", "cr": "\r=1+1",
            "control": "\x01=1+1", "escape_like": "_x0041_=1+1"}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def test_string_arguments_stay_text_in_csv_and_xlsx(tiny_dumps, tmp_path):
    values = {f"{PLANTED_API}.input.{key}": value for key, value in FORMULAS.items()}
    target = renamed_copy(tiny_dumps["statistics_planted"], tmp_path / "target", {}, values)
    done = msprobe("compare", "-tp", target, "-gp", tiny_dumps["statistics"], "-o", tmp_path / "out")
    assert done.returncode == 1, done.stderr
    (csv_path,) = (tmp_path / "out").glob("compare_result_*.csv")
    rows = read_csv(csv_path)
    shown = {r["NPU Name"]: r for r in rows}
    for key, value in FORMULAS.items():
        neutralised = "'" + value if value.startswith(FORMULA_START) else value
        assert shown[f"{PLANTED_API}.input.{key}"]["NPU max"] == neutralised
    for row in rows:
        for cell in row.values():
            if cell.startswith(FORMULA_START):
                float(cell)  # only a number may start like a formula ("-1.5", "-inf")
    sheet = load_workbook(csv_path.with_suffix(".xlsx"))["compare_result"]
    header = [c.value for c in sheet[1]]
    cells = {}
    for line in sheet.iter_rows(min_row=2):
        assert all(c.data_type != "f" for c in line), [c.value for c in line if c.data_type == "f"]
        cells[line[0].value] = line[header.index("NPU max")].value
    for key, value in FORMULAS.items():
        # the string itself, as text: Excel reads _xHHHH_ as that character (ECMA-376 ST_Xstring), which is how XML
        # holds a control character or a bare CR; openpyxl leaves the escape as it is
        assert unescape(cells[f"{PLANTED_API}.input.{key}"]) == value


class _RunsCode:
    """What a hostile ``.pt`` holds: unpickling it calls os.system."""

    def __reduce__(self):
        return os.system, ("touch PWNED",)


def _link_dir_to_etc(files: Path, name: str) -> None:
    shutil.rmtree(files)
    files.symlink_to("/etc")


def _delete(files: Path, name: str) -> None:
    (files / name).unlink()


def _truncate(files: Path, name: str) -> None:
    data = (files / name).read_bytes()
    (files / name).write_bytes(data[: len(data) // 2])


def _link_to_shadow(files: Path, name: str) -> None:
    (files / name).unlink()
    (files / name).symlink_to("/etc/shadow")


def _pickled_code(files: Path, name: str) -> None:
    torch.save(_RunsCode(), files / name)


DAMAGE = {"tensor folder linked to /etc": (_link_dir_to_etc, "missing"),
          "file deleted": (_delete, "missing"), "file cut short": (_truncate, "cut short"),
          "file linked to /etc/shadow": (_link_to_shadow, "resolves outside the dump (to /etc/shadow)"),
          "pickle running code": (_pickled_code, "cannot be read as a tensor")}
DAMAGED = f"{PLANTED_API}.output.0.pt"


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_tensor_comparison_that_cannot_read_a_tensor_is_an_error(tiny_dumps, tmp_path, damage):
    target = tmp_path / "target"
    shutil.copytree(tiny_dumps["tensor"], target)
    files = target / "step0" / "rank" / "dump_tensor_data"
    damage_it, problem = DAMAGE[damage]
    damage_it(files, DAMAGED)
    out = tmp_path / "out"
    done = msprobe("compare", "-tp", target, "-gp", tiny_dumps["tensor"], "-o", out, cwd=tmp_path)
    # the folder linked away loses every file: the first one read is named
    named = f"{files}/" if damage == "tensor folder linked to /etc" else f"{files / DAMAGED}: {problem}"
    said = assert_one_line_error(done, problem)
    assert said.startswith(f"msprobe: error: {named}"), said
    assert not out.exists() and not (tmp_path / "PWNED").exists()
    inspected = msprobe("inspect", target, cwd=tmp_path)  # every tool rejects what compare rejects (the pickle: unread,
    assert inspected.returncode == 2 and problem in inspected.stderr, inspected.stderr  # not run)
    assert not (tmp_path / "PWNED").exists()
    # asked for statistics, the same dumps compare (and agree): no tensor file is read
    done = msprobe("compare", "-tp", target, "-gp", tiny_dumps["tensor"], "-o", out, "--statistics", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "compared by statistics, as asked" in done.stdout and not (tmp_path / "PWNED").exists()


def test_names_holding_terminal_escape_codes_are_printed_escaped(tiny_dumps, tmp_path):
    """Entry and module names from someone else's dump holding ``\\x1b]0;pwn\\x07`` (the terminal's title) or
    ``\\x1b[2J`` (clear the screen) are printed escaped in the report on the console; the files keep them."""
    hostile = {"gelu": f"gelu{HOSTILE_ESCAPES}", "mlp": f"mlp{HOSTILE_ESCAPES}"}
    target = renamed_copy(tiny_dumps["statistics_planted"], tmp_path / "target", hostile)
    golden = renamed_copy(tiny_dumps["statistics"], tmp_path / "golden", hostile)
    code, out, err = printed([MSPROBE, "compare", "-tp", target, "-gp", golden, "-o", tmp_path / "out", "--no-xlsx"],
                             tmp_path)
    assert code == 1 and TERMINAL_CONTROL.search(out + err) is None, (out, err)
    said = out.decode()
    assert f"first divergence at Functional.gelu{HOSTILE_SHOWN}.1.forward (forward)" in said, said
    assert f"mlp{HOSTILE_SHOWN}" in said, said  # the module chain
    summary = json.loads((tmp_path / "out" / "compare_summary.json").read_text())
    assert summary["first_divergence"]["entry"] == f"Functional.gelu{HOSTILE_ESCAPES}.1.forward"


def test_a_401_digit_statistic_compares_as_infinity(tiny_dumps, tmp_path):
    """A statistic written as a 401-digit integer (issue 40) reads as inf, as 1e400 does: compared, no traceback."""
    target = tmp_path / "target"
    shutil.copytree(tiny_dumps["statistics"], target)
    for path in target.rglob("dump.json"):
        doc = json.loads(path.read_text())
        doc["data"][PLANTED_API]["output"][0]["Max"] = 10 ** 400
        path.write_text(json.dumps(doc))
    done = msprobe("compare", "-tp", target, "-gp", tiny_dumps["statistics"], "-o", tmp_path / "out", "--no-xlsx")
    # (an inf where the other side is finite is an error row, judged recorded differently: no divergence)
    assert done.returncode == 0 and done.stderr == "", done.stdout + done.stderr
    (csv_path,) = (tmp_path / "out").glob("compare_result_*.csv")
    row = {r["NPU Name"]: r for r in read_csv(csv_path)}[f"{PLANTED_API}.output.0"]
    assert float(row["NPU max"]) == float("inf") and row["Result"] == "error", row
