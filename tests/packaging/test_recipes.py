"""The justfile recipes that chain tools on user data, run as a user runs them (`./dev <recipe> ARGS`)."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def dev(*args, cwd: Path = REPO, image: bool = False) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, MSPROBE_VENV=sys.prefix, IMAGE="1" if image else "0")
    return subprocess.run([str(REPO / "dev"), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def launch_scripts(folder: Path):
    a, b = folder / "a.sh", folder / "b.sh"
    a.write_text("torchrun --nproc_per_node 2 pretrain_gpt.py --lr 1e-4 --bf16 --train-iters 10\n")
    b.write_text("torchrun --nproc_per_node 2 pretrain_gpt.py --lr 2e-4 --fp16 --train-iters 10\n")
    return a, b


def checkpoints(folder: Path):
    """The demo's tiny GPT written TP1 and, one layer moved, TP2 x PP2 with legacy names."""
    import torch

    from msprobe.ckpt_compare import demo, writer
    base = demo.tiny_gpt()
    later = dict(base)
    later["decoder.layers.1.mlp.linear_fc2.weight"] = base["decoder.layers.1.mlp.linear_fc2.weight"] + 0.01
    a = writer.write_megatron(folder / "ckpt_a", base, demo.args(), iteration=1)
    # demo.args() says swiglu: its TP shards of linear_fc1 hold [gate; up] halves, as Megatron saves them
    b = writer.write_megatron(folder / "ckpt_b", later, demo.args(), tp=2, pp=2, iteration=2, style="legacy",
                              gated=True)
    assert torch.load(next(a.rglob("*.pt")), weights_only=False)["iteration"] == 1
    return a, b


def check_env_diff(result, out: Path) -> None:
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert (out / "a.zip").is_file() and (out / "b.zip").is_file()
    assert "hyperparameters" in result.stdout and "error" in result.stdout
    assert any((out / "result").iterdir())


def check_ckpt_diff(result, out: Path) -> None:
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    entries = json.loads(out.read_text())
    changed = "decoder.layers.1.mlp.linear_fc2.weight"
    assert entries[changed]["l2"] > 0 and entries[changed]["cos"] < 1
    assert len(entries) > 20 and all(e["l2"] == 0.0 for name, e in entries.items() if name != changed)


def test_env_diff_packs_both_scripts_and_names_what_differs(tmp_path):
    a, b = launch_scripts(tmp_path)
    out = tmp_path / "env"
    check_env_diff(dev("env-diff", a, b, out), out)


def test_ckpt_diff_compares_two_layouts(tmp_path):
    a, b = checkpoints(tmp_path)
    out = tmp_path / "diff" / "ckpt.json"
    check_ckpt_diff(dev("ckpt-diff", a, b, out), out)


def statistics_dump(folder: Path, model, x) -> Path:
    """A statistics dump (level L1) of one forward and backward of MODEL on X, as a user's script makes it."""
    from msprobe.pytorch import PrecisionDebugger

    dump = folder / "dump"
    config = folder / "config.json"
    config.write_text(json.dumps({"task": "statistics", "dump_path": str(dump), "level": "L1", "rank": [],
                                  "step": [], "statistics": {"scope": [], "list": [], "data_mode": ["all"]}}))
    debugger = PrecisionDebugger(config_path=str(config))
    debugger.start(model)
    model(x).float().sum().backward()
    debugger.stop()
    debugger.step()
    return dump


def overflowing_dump(folder: Path) -> Path:
    """A float16 linear layer feeding exp: activations of 20 overflow float16 (exp(20) = 4.85e8 > 65504)."""
    import torch

    class ExpNet(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = torch.nn.Linear(8, 8)

        def forward(self, x):
            return torch.exp(self.fc(x)).sum(dim=-1)

    model = ExpNet().half()
    with torch.no_grad():
        model.fc.weight.fill_(0.5)
        model.fc.bias.zero_()
    return statistics_dump(folder, model, torch.full((4, 8), 5.0, dtype=torch.float16))


def check_first_overflow(result, out: Path) -> None:
    """What the user sees: the API named, the script written and run, its row, the verdict; the files beside."""
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    script = out / "op" / "Torch.exp.0.forward.py"
    lines = result.stdout.splitlines()
    assert lines[0] == "first-overflow: first overflowing API: Torch.exp.0.forward (step0/rank)", lines
    assert f"wrote {script}" in lines and f"first-overflow: running {script} (reports in {out}/op_result_output)" in lines
    row = next(line for line in lines if line.startswith("Torch.exp.0.forward.output.0: "))
    assert row.split()[1] == "error" and "max abs err inf" in row and row.endswith("golden: tested"), row
    assert lines[-1] == ("first-overflow: verdict: Torch.exp.0.forward alone reproduces the overflow: its output "
                         "departs from the torch CPU bench (rows above)"), lines
    assert [s["origin"]["op_name"] for s in json.loads((out / "overflow.json").read_text())] == ["Torch.exp.0.forward"]
    assert len(list((out / "overflow").glob("anomaly_analyze_*.json"))) == 1
    with open(next((out / "op_result_output").glob("accuracy_checking_details_*.csv")), newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["API Name"], r["Tested Dtype"], r["Bench Dtype"], r["Status"], r["Further From Golden"])
            for r in rows] == [("Torch.exp.0.forward.output.0", "float16", "float32", "error", "tested")], rows


def test_first_overflow_without_inf_says_so(tmp_path):
    import torch

    dump = statistics_dump(tmp_path, torch.nn.Linear(4, 4), torch.ones(2, 4))
    result = dev("first-overflow", dump, tmp_path / "fo")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.strip() == f"first-overflow: no inf/nan in {dump}"


def test_first_overflow_on_a_real_overflow_reproduces_it_with_op_generate(tmp_path):
    dump = overflowing_dump(tmp_path)
    out = tmp_path / "fo"
    check_first_overflow(dev("first-overflow", dump, out), out)
    again = dev("first-overflow", dump, out)  # the same OUT again: the script is rewritten, not refused
    assert again.returncode == 0 and again.stdout.splitlines()[-1].startswith("first-overflow: verdict: "), again.stderr
