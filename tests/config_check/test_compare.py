"""Comparison rules and bad input, on packs written the way msprobe and our packer write them."""
from __future__ import annotations

import csv
import json
import zipfile
from pathlib import Path

import openpyxl
import pytest

from cc_helpers import error_lines, msprobe, sheet_rows, summary, summary_detail

from msprobe.core.config_check.compare import compare_packs
from msprobe.core.config_check.formats import write_zip
from msprobe.schema.errors import MsprobeError

STATS = {"max": 2.0, "min": -1.0, "mean": 0.5, "norm": 3.0}


def make_pack(path: Path, env=None, pip=None, weights=None, dataset=None, random=None, static=None) -> Path:
    entries = {"env": json.dumps(env if env is not None else {"PATH": "/usr/bin"}).encode(),
               "pip": "".join(f"{k}={v}\n" for k, v in (pip or {"torch": "2.1.0"}).items()).encode()}
    for (step, rank), value in (weights or {}).items():
        entries[f"weights/step{step}/rank{rank}/weight.json"] = json.dumps(value).encode()
    for (step, rank), value in (dataset or {}).items():
        entries[f"dataset/step{step}/rank{rank}/dataset.json"] = json.dumps(value).encode()
    for rank, value in (random or {}).items():
        entries[f"random/rank{rank}.json"] = json.dumps(value).encode()
    if static is not None:
        entries["hyperparameters/hyperparameters_static.json"] = json.dumps(static).encode()
    write_zip(path, entries)
    return path


def test_env_curated_error_other_info_and_cross_device(tmp_path):
    bench = make_pack(tmp_path / "a.zip", env={"CUDA_LAUNCH_BLOCKING": "0", "HOME": "/a", "NCCL_ALGO": "Ring"})
    cmp = make_pack(tmp_path / "b.zip", env={"HOME": "/b", "NCCL_ALGO": "Tree"})
    compare_packs(bench, cmp, tmp_path / "out")
    rows = {r["bench_env_name"]: (r["bench_value"], r["cmp_value"], r["level"])
            for r in sheet_rows(tmp_path / "out", "env")}
    # CUDA_LAUNCH_BLOCKING=0 is the default, so unset on the other side is the same
    assert rows == {"NCCL_ALGO": ("Ring", "Tree", "error"), "HOME": ("/a", "/b", "info")}
    npu = make_pack(tmp_path / "npu.zip", env={"ASCEND_HOME_PATH": "/x", "HCCL_DETERMINISTIC": "true"})
    gpu = make_pack(tmp_path / "gpu.zip", env={"NCCL_DETERMINISTIC": "1"})
    compare_packs(npu, gpu, tmp_path / "out2")
    rows = [r for r in sheet_rows(tmp_path / "out2", "env") if r["bench_env_name"] == "HCCL_DETERMINISTIC"]
    assert rows[0]["cmp_env_name"] == "NCCL_DETERMINISTIC" and rows[0]["level"] == "error"


def test_pip_key_library_error_other_warning(tmp_path):
    bench = make_pack(tmp_path / "a.zip", pip={"torch": "2.1.0", "Torch_NPU": "2.1.0", "rich": "13"})
    cmp = make_pack(tmp_path / "b.zip", pip={"torch": "2.1.0", "torch-npu": "2.1.1", "rich": "14", "extra": "1"})
    compare_packs(bench, cmp, tmp_path / "out")
    rows = {r["package"]: (r["bench version"], r["cmp version"], r["level"])
            for r in sheet_rows(tmp_path / "out", "pip")}
    assert rows == {"Torch_NPU": ("2.1.0", "2.1.1", "error"), "rich": ("13", "14", "warning"),
                    "extra": ("None", "1", "warning")}
    assert summary(tmp_path / "out")["pip"] == "error"


def test_hyperparameters_alias_rename_and_shared_names(tmp_path):
    bench = make_pack(tmp_path / "a.zip", static={"lr": "1e-4", "train.lr": 0.0001, "bf16": True, "seed": "1"})
    cmp = make_pack(tmp_path / "b.zip", static={"learning_rate": 0.0001, "train.lr": 0.0001, "bf16": "true",
                                                "seed": "2"})
    compare_packs(bench, cmp, tmp_path / "out")
    rows = {(r["bench_para"], r["cmp_para"]): (r["level"], r["matched_with"])
            for r in sheet_rows(tmp_path / "out", "hyperparameters")}
    assert rows == {("seed", "seed"): ("error", "name"),
                    ("lr", "learning_rate"): ("info", "renamed (alias:learning_rate)")}


def test_weights_exact_sign_and_tolerance(tmp_path):
    bench = make_pack(tmp_path / "a.zip", weights={(0, 0): {"w": STATS, "b": STATS}})
    cmp = make_pack(tmp_path / "b.zip", weights={(0, 0): {"w": dict(STATS, max=2.002), "b": STATS}})
    compare_packs(bench, cmp, tmp_path / "out")
    rows = sheet_rows(tmp_path / "out", "weights")
    assert [(r["weight_name"], r["differing"], r["level"]) for r in rows] == [("w", "1 of 1", "error"),
                                                                              ("b", "0 of 1", "pass")]
    assert rows[0]["worst_relative_diff"] == pytest.approx(0.001)  # cmp larger -> positive
    assert rows[0]["worst_statistic"] == "max"
    assert compare_packs(bench, cmp, tmp_path / "out", tolerance=0.01) == 0
    assert summary(tmp_path / "out")["weights"] == "pass"
    assert compare_packs(bench, cmp, tmp_path / "out", fail_on_error=True) == 1


def test_weights_at_size_one_row_per_parameter_and_full_detail_in_csv(tmp_path):
    """Every weight differs from step 2 on: the sheet says where each parameter starts to differ."""
    ranks, steps, names = 3, 6, [f"layers.{i}.weight" for i in range(5)]
    bench_w, cmp_w = {}, {}
    for step in range(steps):
        for rank in range(ranks):
            bench_w[(step, rank)] = {name: STATS for name in names}
            cmp_w[(step, rank)] = {name: dict(STATS, mean=STATS["mean"] * (1 + 0.001 * (index + 1) * max(0, step - 1)))
                                   for index, name in enumerate(names)}
    cmp_w[(1, 2)]["layers.4.weight"] = dict(STATS, norm=3.3)  # diverges earlier, on rank 2 only
    bench = make_pack(tmp_path / "a.zip", weights=bench_w)
    cmp = make_pack(tmp_path / "b.zip", weights=cmp_w)
    compare_packs(bench, cmp, tmp_path / "out")
    rows = {r["weight_name"]: r for r in sheet_rows(tmp_path / "out", "weights")}
    assert len(rows) == 5
    first = rows["layers.4.weight"]
    assert (first["first_step"], first["first_rank"], first["differing"]) == (1, 2, "13 of 18")
    assert first["worst_statistic"] == "norm" and first["worst_relative_diff"] == pytest.approx(0.1)
    layer0 = rows["layers.0.weight"]
    assert (layer0["first_step"], layer0["first_rank"], layer0["worst_step"]) == (2, 0, 5)
    assert layer0["worst_relative_diff"] == pytest.approx(0.004) and layer0["worst_statistic"] == "mean"
    assert list(rows)[0] == "layers.4.weight"  # earliest divergence first
    with open(tmp_path / "out" / "weights.csv", newline="") as stream:
        detail = list(csv.DictReader(stream))
    assert len(detail) == ranks * steps * len(names)
    row = next(r for r in detail if (r["step"], r["rank"], r["weight_name"]) == ("3", "1", "layers.2.weight"))
    assert row["equal"] == "False" and float(row["mean_relative_diff"]) == pytest.approx(0.006)
    assert summary(tmp_path / "out")["weights"] == "error"
    detail_text = summary_detail(tmp_path / "out")["weights"]
    assert "61 of 90" in detail_text and "layers.4.weight" in detail_text


def test_statistics_that_are_not_numbers_compare_as_values(tmp_path):
    odd = {"max": None, "min": "n/a", "mean": 2**70, "norm": 1.0}
    bench = make_pack(tmp_path / "a.zip", weights={(0, 0): {"odd": odd, "w": STATS}, (1, 0): {"odd": odd, "w": STATS}})
    cmp = make_pack(tmp_path / "b.zip", weights={(0, 0): {"odd": odd, "w": STATS},
                                                 (1, 0): {"odd": dict(odd, norm=2.0), "w": dict(STATS, min=-2.0)}})
    compare_packs(bench, cmp, tmp_path / "out")
    rows = {r["weight_name"]: (r["differing"], r["worst_relative_diff"], r["first_step"]) for r in
            sheet_rows(tmp_path / "out", "weights")}
    assert rows == {"odd": ("1 of 2", "value differs", 1), "w": ("1 of 2", -1.0, 1)}  # min -1 -> -2


def test_report_is_readable(tmp_path):
    bench = make_pack(tmp_path / "a.zip", env={"NCCL_ALGO": "Ring"})
    cmp = make_pack(tmp_path / "b.zip", env={"NCCL_ALGO": "Tree"})
    compare_packs(bench, cmp, tmp_path / "out")
    book = openpyxl.load_workbook(tmp_path / "out" / "result.xlsx")
    assert book.sheetnames == ["summary", "env", "pip", "dataset", "weights", "hyperparameters", "random"]
    sheet = book["summary"]
    assert sheet.freeze_panes == "A2" and sheet["A1"].font.bold
    colours = {sheet.cell(row, 1).value: sheet.cell(row, 2).fill.start_color.rgb[-6:] for row in range(2, 8)}
    assert colours["env"] == "FFC7CE" and colours["pip"] == "C6EFCE" and colours["weights"] == "EDEDED"
    assert book["env"].column_dimensions["F"].width > 20
    assert (tmp_path / "out" / "bench" / "env").is_file() and (tmp_path / "out" / "cmp" / "pip").is_file()


@pytest.mark.filterwarnings("ignore:Duplicate name")
def test_reads_msprobe_packs(tmp_path):
    """msprobe's own layout: no seeds, duplicate entries appended by a re-pack, stack strings."""
    frame = "File /home/u/train.py, line 3, in <module>, torch.manual_seed(1)"
    path = tmp_path / "up.zip"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("env", json.dumps({"A": "1"}))
        archive.writestr("pip", "torch=2.1.0\nnumpy=1.26\n")
        archive.writestr("env", json.dumps({"A": "2"}))  # msprobe appends on re-pack
        archive.writestr("random/rank0.json", json.dumps({"torch.manual_seed": [{"count": 1, "stack": [frame]}]}))
        archive.writestr("dataset/step0/rank0/dataset.json", json.dumps({"args": {"0": STATS}, "kwargs": {}}))
        archive.writestr("weights/step0/rank0/weight.json", json.dumps({"w": STATS}))
    ours = make_pack(tmp_path / "ours.zip", env={"A": "2"}, pip={"torch": "2.1.0", "numpy": "1.26"},
                     weights={(0, 0): {"w": STATS}}, dataset={(0, 0): {"args": {"0": STATS}, "kwargs": {}}},
                     random={0: {"torch.manual_seed": [{"count": 1, "stack": [frame.replace("/home/u", "/x")]}]}})
    assert compare_packs(path, ours, tmp_path / "out") == 0
    assert set(summary(tmp_path / "out").values()) == {"pass", "none"}
    assert summary(tmp_path / "out")["hyperparameters"] == "none"  # in neither pack: nothing to compare


def _bad_packs(tmp_path: Path):
    (tmp_path / "text.zip").write_text("not a zip")
    good = make_pack(tmp_path / "good.zip")
    corrupt = tmp_path / "corrupt.zip"
    with zipfile.ZipFile(corrupt, "w", compression=zipfile.ZIP_STORED) as archive:
        archive.writestr("env", json.dumps({"X": "y" * 2000}))
        archive.writestr("pip", "torch=1\n")
    data = bytearray(corrupt.read_bytes())
    start = data.find(b"yyyy") + 500
    data[start:start + 20] = b"z" * 20  # the CRC no longer matches
    corrupt.write_bytes(bytes(data))
    escape = tmp_path / "escape.zip"
    with zipfile.ZipFile(escape, "w") as archive:
        archive.writestr("env", "{}")
        archive.writestr("pip", "")
        archive.writestr("../../evil.txt", "x")
    no_env = tmp_path / "noenv.zip"
    with zipfile.ZipFile(no_env, "w") as archive:
        archive.writestr("pip", "torch=1\n")
    malformed = tmp_path / "malformed.zip"
    with zipfile.ZipFile(malformed, "w") as archive:
        archive.writestr("env", "{}")
        archive.writestr("pip", "torch=1\n")
        archive.writestr("weights/step0/rank0/weight.json", "{not json")
    return good, [("text.zip", "not a zip file"), ("corrupt.zip", "corrupt zip"),
                  ("escape.zip", "entry '../../evil.txt'"), ("noenv.zip", "entry 'env': missing"),
                  ("malformed.zip", "entry 'weights/step0/rank0/weight.json': malformed JSON")]


def test_bad_packs_fail_with_one_line_and_touch_nothing(tmp_path):
    good, cases = _bad_packs(tmp_path)
    for name, needle in cases:
        done = msprobe("-f", "pytorch", "config_check", "-c", str(good), str(tmp_path / name), "-o",
                       str(tmp_path / "out"))
        assert done.returncode == 2, (name, done.stdout, done.stderr)
        assert needle in done.stderr and len(error_lines(done.stderr)) == 1, done.stderr
        assert not (tmp_path / "out").exists() and not (tmp_path.parent / "evil.txt").exists()


def test_output_folder_is_only_replaced_when_we_made_it(tmp_path):
    pack = make_pack(tmp_path / "a.zip")
    user = tmp_path / "mine"
    user.mkdir()
    (user / "thesis.tex").write_text("precious")
    with pytest.raises(MsprobeError, match="not created by msprobe config_check"):
        compare_packs(pack, pack, user)
    assert (user / "thesis.tex").read_text() == "precious"
    with pytest.raises(MsprobeError, match="contains the input pack"):
        compare_packs(pack, pack, tmp_path)
    compare_packs(pack, pack, tmp_path / "out")
    (tmp_path / "out" / "stale").write_text("old")
    compare_packs(pack, pack, tmp_path / "out")  # made by us: deleted and recreated, as the doc says
    assert not (tmp_path / "out" / "stale").exists()


def test_cli_compare_default_output_and_fail_on_error(tmp_path):
    make_pack(tmp_path / "a.zip", env={"NCCL_ALGO": "Ring"})
    make_pack(tmp_path / "b.zip", env={"NCCL_ALGO": "Tree"})
    done = msprobe("-f", "pytorch", "config_check", "-c", "a.zip", "b.zip", cwd=tmp_path)
    assert done.returncode == 0 and (tmp_path / "config_check_result" / "result.xlsx").is_file()
    assert "env              error" in done.stdout
    done = msprobe("-f", "pytorch", "config_check", "-c", "a.zip", "b.zip", "--fail-on-error", cwd=tmp_path)
    assert done.returncode == 1


UPSTREAM_COMPARE = """
import sys, unittest.mock as mock
for name in ("matplotlib", "matplotlib.pyplot", "twisted", "twisted.internet"):
    sys.modules.setdefault(name, mock.MagicMock())  # msprobe imports them at package level only
from msprobe.core.config_check.config_checker import ConfigChecker
import msprobe.core.config_check.checkers
ConfigChecker.compare(sys.argv[1], sys.argv[2], sys.argv[3])
"""


def test_msprobe_reads_our_packs(tmp_path):
    """msprobe 26.2.0 itself (PyPI mindstudio-probe, in a cached venv) compares two packs we wrote."""
    import subprocess
    from tests.support.upstream_msprobe import upstream_python
    stack = ["File /x/train.py, line 3, in <module>, torch.manual_seed(1)"]
    for name, algo in (("a", "Ring"), ("b", "Tree")):
        make_pack(tmp_path / f"{name}.zip", env={"NCCL_ALGO": algo, "HF_TOKEN": f"<secret hmac:0123abcd:{'0' * 16}>"},
                  weights={(0, 0): {"w": STATS}}, dataset={(0, 0): {"args": {"0": STATS}, "kwargs": {}}},
                  static={"lr": "0.1"}, random={0: {"torch.manual_seed": [{"count": 1, "stack": stack, "seeds": [1]}]}})
    done = subprocess.run([str(upstream_python("26.2.0")), "-c", UPSTREAM_COMPARE, str(tmp_path / "a.zip"),
                           str(tmp_path / "b.zip"), str(tmp_path / "up")], capture_output=True, text=True,
                          timeout=600, env={k: v for k, v in __import__("os").environ.items() if k != "PYTHONPATH"})
    assert done.returncode == 0, done.stderr[-2000:]
    assert summary(tmp_path / "up") == {"env": "error", "pip": "pass", "dataset": "pass", "weights": "pass",
                                        "hyperparameters": "pass", "random": "pass"}
