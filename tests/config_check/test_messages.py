"""What the comparison tells: top differing keys, precision flags, 'none', result.json, progress."""
from __future__ import annotations

import json

from cc_helpers import msprobe, sheet_rows, summary, summary_detail
from test_compare import STATS, make_pack

from msprobe.core.config_check.compare import compare_packs
from tests.support.cli import MSPROBE
from tests.support.terminal import on_a_terminal


def test_summary_names_the_top_differing_keys(tmp_path):
    make_pack(tmp_path / "a.zip", env={"NCCL_ALGO": "Ring", "HCCL_ALGO": "x", "HOME": "/a"},
              pip={"torch": "2.1.0", "rich": "13", "tqdm": "4"}, static={"lr": "0.1", "seed": "1"})
    make_pack(tmp_path / "b.zip", env={"NCCL_ALGO": "Tree", "HCCL_ALGO": "y", "HOME": "/b"},
              pip={"torch": "2.2.0", "rich": "14", "tqdm": "4"}, static={"lr": "0.2", "seed": "1", "wd": "0"})
    done = msprobe("config_check", "-c", "a.zip", "b.zip", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    detail = summary_detail(tmp_path / "out")
    assert detail["env"] == "2 error (HCCL_ALGO, NCCL_ALGO), 1 info"
    assert detail["pip"] == "1 error (torch), 1 warning (rich)"
    assert detail["hyperparameters"] == "1 error (lr), 1 warning (wd)"
    assert "env              error   2 error (HCCL_ALGO, NCCL_ALGO), 1 info" in done.stdout


def test_differing_precision_flags_are_an_error(tmp_path):
    bench = make_pack(tmp_path / "a.zip", static={"lr": "0.1", "bf16": True})
    cmp = make_pack(tmp_path / "b.zip", static={"lr": "0.1", "fp16": True})
    compare_packs(bench, cmp, tmp_path / "out")
    rows = {(r["bench_para"], r["cmp_para"]): (r["matched_with"], r["level"])
            for r in sheet_rows(tmp_path / "out", "hyperparameters")}
    assert rows == {("bf16", "Only in benchmark"): ("precision flag", "error"),
                    ("Only in comparison", "fp16"): ("precision flag", "error")}
    assert summary(tmp_path / "out")["hyperparameters"] == "error"
    other = make_pack(tmp_path / "c.zip", static={"lr": "0.1", "bf16": True, "log-interval": "10"})
    compare_packs(bench, other, tmp_path / "out")
    assert summary(tmp_path / "out")["hyperparameters"] == "warning"  # any other one-sided option


def test_nothing_to_compare_is_its_own_state_and_result_json(tmp_path):
    bench = make_pack(tmp_path / "a.zip", env={"NCCL_ALGO": "Ring"}, weights={(0, 0): {"w": STATS}})
    cmp = make_pack(tmp_path / "b.zip", env={"NCCL_ALGO": "Tree"}, weights={(0, 0): {"w": dict(STATS, norm=4.0)}})
    assert compare_packs(bench, cmp, tmp_path / "out") == 0
    assert summary(tmp_path / "out") == {"env": "error", "pip": "pass", "dataset": "none", "weights": "error",
                                         "hyperparameters": "none", "random": "none"}
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["level"] == "error" and result["bench"] == str(bench) and result["report"] == "result.xlsx"
    items = {item["item"]: item for item in result["items"]}
    assert items["dataset"]["level"] == "none" and "collected in neither pack" in items["dataset"]["note"]
    assert items["env"]["top"] == {"error": ["NCCL_ALGO"]} and items["env"]["counts"] == {"error": 1}
    assert items["weights"]["top"] == {"error": ["w"]}
    assert result["details"]["weights"] == "weights.csv" and (tmp_path / "out" / "weights.csv").is_file()


def test_progress_only_on_a_terminal_and_not_with_quiet(tmp_path):
    weights = {(step, 0): {"w": STATS} for step in range(50)}
    make_pack(tmp_path / "a.zip", weights=weights)
    make_pack(tmp_path / "b.zip", weights=weights)
    command = [MSPROBE, "config_check", "-c", "a.zip", "b.zip", "-o", "out"]
    code, shown = on_a_terminal(command, tmp_path)
    assert code == 0 and "reading a.zip" in shown and "writing the report" in shown, shown
    code, shown = on_a_terminal(command + ["--quiet"], tmp_path)
    assert code == 0 and "reading" not in shown, shown
    done = msprobe("config_check", "-c", "a.zip", "b.zip", "-o", "out", cwd=tmp_path)  # not a terminal
    assert done.returncode == 0 and "reading" not in done.stderr and "\x1b" not in done.stdout + done.stderr
