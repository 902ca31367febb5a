"""The justfile recipes that chain tools on user data, run as a user runs them (`./dev <recipe> ARGS`)."""
from __future__ import annotations

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.checkout import untracked
from tests.support.torchrun import two_ranks

REPO = Path(__file__).resolve().parents[2]


def dev(*args, cwd: Path = REPO, image: bool = False, env=None) -> "subprocess.CompletedProcess[str]":
    env = dict(os.environ, MSPROBE_VENV=sys.prefix, IMAGE="1" if image else "0", **(env or {}))
    return subprocess.run([str(REPO / "dev"), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=900)


def launch_scripts(folder: Path):
    """Two launch scripts that differ in what they export (and in one launch prefix), as well as in options."""
    a, b = folder / "a.sh", folder / "b.sh"
    a.write_text("export NCCL_ALGO=Ring HF_TOKEN=hf_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\nexport HCCL_DETERMINISTIC=true\n"
                 "env OMP_NUM_THREADS=4 torchrun --nproc_per_node 2 pretrain_gpt.py --lr 1e-4 --bf16 --train-iters 10\n")
    b.write_text("NCCL_ALGO=Tree\nexport NCCL_ALGO HF_TOKEN=hf_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n"
                 "OMP_NUM_THREADS=8 torchrun --nproc_per_node 2 pretrain_gpt.py --lr 2e-4 --fp16 --train-iters 10\n")
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
    """The scripts' exports compared, not the packing shell's environment (the same on both sides): NCCL_ALGO and
    OMP_NUM_THREADS differ, HCCL_DETERMINISTIC is set in one only; the token, masked under each pack's own key,
    is said to be left uncompared."""
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert (out / "a.zip").is_file() and (out / "b.zip").is_file()
    lines = {line.split()[0]: line for line in result.stdout.splitlines() if line.strip()}
    assert lines["hyperparameters"].split()[1] == "error" and "lr" in lines["hyperparameters"], result.stdout
    env = lines["env"]
    assert env.split()[1] == "error" and "1 masked value(s) not compared" in env, env
    assert all(name in env for name in ("HCCL_DETERMINISTIC", "NCCL_ALGO", "OMP_NUM_THREADS")), env
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
    first = dev("ckpt-diff", a, b, out)
    check_ckpt_diff(first, out)
    assert not any("$3" in line or line.startswith("mkdir") for line in first.stdout.splitlines() + first.stderr.splitlines()), first
    again = dev("ckpt-diff", a, b, out)  # what a second run says: msprobe's one line, not just's on top of it
    assert again.returncode == 2 and again.stderr.splitlines() == [
        f"msprobe: error: {out}: output path exists; remove it or choose another -o (results are never overwritten)"
    ], again.stderr


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
                         "holds inf/nan at 32 place(s) where the torch CPU bench's is finite (rows above)"), lines
    assert [s["origin"]["op_name"] for s in json.loads((out / "overflow.json").read_text())] == ["Torch.exp.0.forward"]
    assert len(list((out / "overflow").glob("anomaly_analyze_*.json"))) == 1
    with open(next((out / "op_result_output").glob("accuracy_checking_details_*.csv")), newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["API Name"], r["Tested Dtype"], r["Bench Dtype"], r["Status"], r["Further From Golden"],
             r["Inf/NaN Not In Bench"]) for r in rows] == [
        ("Torch.exp.0.forward.output.0", "float16", "float32", "error", "tested", "32")], rows  # all 4 x 8 are inf


@pytest.mark.checkout
def test_recipes_list_in_one_line_each_and_say_what_they_check():
    """`./dev --list` shows each recipe's [doc] line (a multi-line comment showed its last line, read as nonsense);
    `./dev RECIPE --help` says what it does without running it (first-overflow took --help for a dump)."""
    recipes = dev("--summary").stdout.split()
    listed = dev("--list").stdout
    before = untracked(ignored=True)
    for recipe in recipes:
        header = re.search(rf"^(\[doc\(\"(?P<doc>[^\"]+)\"\)\]\n)(\[[^\n]*\n)*{re.escape(recipe)}[ :]",
                           (REPO / "justfile").read_text(), flags=re.M)
        assert header, f"{recipe} has no [doc(...)] line"
        assert f"# {header['doc']}" in listed, (recipe, listed)
        helped = dev(recipe, "--help")
        assert helped.returncode == 0, (recipe, helped.stderr)
        assert helped.stdout.startswith(f"usage: ./dev {recipe}") and header["doc"] in helped.stdout, helped.stdout
    assert untracked(ignored=True) == before



def test_first_overflow_on_masks_only_says_what_it_left_out(tmp_path):
    """A dump whose only inf/nan is an attention mask: not "no inf/nan", but what was left out and why."""
    import torch

    class Masked(torch.nn.Module):
        def forward(self, x):
            scores = x @ x.transpose(-1, -2)
            mask = torch.ones(4, 4, dtype=torch.bool).triu(1)
            return torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)

    dump = statistics_dump(tmp_path, Masked(), torch.ones(4, 4, requires_grad=True))
    result = dev("first-overflow", dump, tmp_path / "fo")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.strip() == (
        f"first-overflow: no overflow in {dump}: 2 tensor(s) hold inf/nan, all left out as expected; they begin at "
        "Tensor.masked_fill.0.forward: it was given an inf/nan number (an attention mask: masked_fill(mask, -inf), "
        f"full(..., -inf)) (msprobe overflow_check -i {dump} --include-expected analyses them as overflows)")


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


def inherited_overflow_dump(folder: Path) -> Path:
    """A float32 linear layer fed one inf: its output is inf because its input is (overflow_check: inherited).
    Reproduced alone on random data (the dumped Min 1 first, its Max inf last, the rest drawn with the infinite
    bound taken as 0), float32 against the float64 bench differs by rounding only (~5e-8, under the 1e-4 rule) and
    the row holding the inf is inf on both sides: the script exits 0."""
    import torch

    model = torch.nn.Linear(8, 8)
    with torch.no_grad():
        model.weight.fill_(0.5)
        model.bias.zero_()
    x = torch.ones(4, 8)
    x[1, 3] = float("inf")
    return statistics_dump(folder, model, x)


def test_first_overflow_on_inherited_inf_clears_the_api(tmp_path):
    """The other verdict: the API alone agrees with the bench (the script exits 0), the inf came from upstream."""
    dump = inherited_overflow_dump(tmp_path)
    out = tmp_path / "fo"
    result = dev("first-overflow", dump, out)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    script = out / "op" / "Functional.linear.0.forward.py"
    lines = result.stdout.splitlines()
    assert lines[0] == ("first-overflow: first API with inf/nan (already in its inputs): Functional.linear.0.forward "
                        "(step0/rank)"), lines
    assert f"wrote {script}" in lines and f"first-overflow: running {script} (reports in {out}/op_result_output)" in lines
    row = next(line for line in lines if line.startswith("Functional.linear.0.forward.output.0: "))
    assert row.split()[1] == "pass", row
    assert lines[-1] == ("first-overflow: verdict: Functional.linear.0.forward alone agrees with the torch CPU bench "
                         "on inputs drawn in the dumped range: the kernel is not at fault, look at the values that "
                         "reach it"), lines
    assert not any("alone reproduces the overflow" in line for line in lines), lines
    steps = json.loads((out / "overflow.json").read_text())
    assert [(e["op_name"], e["kind"]) for s in steps for e in s["events"]] == [
        ("Functional.linear.0.forward", "inherited")], steps
    with open(next((out / "op_result_output").glob("accuracy_checking_details_*.csv")), newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["API Name"], r["Tested Dtype"], r["Bench Dtype"], r["Status"], r["Inf/NaN Not In Bench"])
            for r in rows] == [("Functional.linear.0.forward.output.0", "float32", "float64", "pass", "0")], rows
    assert float(rows[0]["MaxAbsErr"]) < 1e-4 and float(rows[0]["Cosine"]) > 0.99, rows


def test_first_overflow_on_inherited_inf_in_float16_differs_without_overflowing(tmp_path):
    """The same layer in float16: against the float32 bench it fails the 1e-4 rule by rounding (6.1e-4, within
    float16's own tolerance), and its only inf is the one of its input, which the bench holds too. Exit status 1
    of the script is then not an overflow: the verdict says it differs without overflowing."""
    import torch

    model = torch.nn.Linear(8, 8)
    with torch.no_grad():
        model.weight.fill_(0.5)
        model.bias.zero_()
    x = torch.ones(4, 8, dtype=torch.float16)
    x[1, 3] = float("inf")
    dump = statistics_dump(tmp_path, model.half(), x)
    out = tmp_path / "fo"
    result = dev("first-overflow", dump, out)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert lines[0] == ("first-overflow: first API with inf/nan (already in its inputs): Functional.linear.0.forward "
                        "(step0/rank)"), lines
    row = next(line for line in lines if line.startswith("Functional.linear.0.forward.output.0: "))
    assert row.split()[1] == "error" and row.endswith("golden: tested"), row
    assert lines[-1] == ("first-overflow: verdict: Functional.linear.0.forward alone differs from the torch CPU bench "
                         "beyond the tolerance but does not overflow: no inf/nan of its own on inputs drawn in the "
                         "dumped range (rows above; the details CSV's Dtype Status says whether its dtype's rounding "
                         "explains the difference)"), lines
    assert not any("alone reproduces the overflow" in line for line in lines), lines
    with open(next((out / "op_result_output").glob("accuracy_checking_details_*.csv")), newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["Tested Dtype"], r["Bench Dtype"], r["Status"], r["Dtype Status"], r["Inf/NaN Not In Bench"])
            for r in rows] == [("float16", "float32", "error", "pass", "0")], rows
    assert 1e-4 < float(rows[0]["MaxAbsErr"]) < 1e-3, rows


def broken_torch_npu(folder: Path, body: str) -> dict:
    """The environment of a machine whose torch_npu is broken (faked: there is no NPU here): PYTHONPATH holding a
    torch_npu package of ``body``. Only the generated script imports torch_npu (to pick its device)."""
    package = folder / "npu" / "torch_npu"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(body)
    return {"PYTHONPATH": str(folder / "npu")}


def ours(stderr: str) -> list:
    """The recipe's own lines on stderr (overflow_check's `wrote ...` and just's `error: recipe ...` aside)."""
    return [line for line in stderr.splitlines() if line.startswith("first-overflow:")]


def running(out: Path, script: Path) -> list:
    return ["first-overflow: first overflowing API: Torch.exp.0.forward (step0/rank)",
            f"first overflow: Torch.exp.0 in {out.parent}/dump/step0/rank/dump.json", f"wrote {script}",
            f"first-overflow: running {script} (reports in {out}/op_result_output)"]


@pytest.mark.parametrize("body, said", [
    ('raise SystemExit("torch_npu: CANN is not set up (source set_env.sh)")\n',
     "torch_npu: CANN is not set up (source set_env.sh)"),
    ('raise RuntimeError("libascendcl.so: cannot open shared object file")\n',
     "RuntimeError: libascendcl.so: cannot open shared object file")])
def test_first_overflow_tells_a_crash_of_the_script_from_a_verdict(tmp_path, body, said):
    """The script dies before its verdict (exit status 1, as for a row in error, but no report): a failure."""
    dump = overflowing_dump(tmp_path)
    out = tmp_path / "fo"
    result = dev("first-overflow", dump, out, env=broken_torch_npu(tmp_path, body))
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    script = out / "op" / "Torch.exp.0.forward.py"
    assert result.stdout.splitlines() == running(out, script), result.stdout
    errors = result.stderr.splitlines()
    failed = (f"first-overflow: {script} failed with exit status 1 and left no readable report in "
              f"{out}/op_result_output (its messages are above)")
    assert ours(result.stderr) == [failed] and errors.index(said) < errors.index(failed), errors
    assert not any("verdict" in line for line in result.stdout.splitlines() + errors), result
    assert not (out / "op_result_output").exists()


def test_first_overflow_fails_when_the_api_cannot_run(tmp_path):
    """torch_npu imports but its device does not work: the tested side fails, the script reports it (exit status 1,
    a row in error without numbers): no verdict on the overflow, a failure naming why."""
    dump = overflowing_dump(tmp_path)
    out = tmp_path / "fo"
    result = dev("first-overflow", dump, out, env=broken_torch_npu(tmp_path, ""))
    assert result.returncode == 1, result.stdout[-2000:] + result.stderr[-2000:]
    script = out / "op" / "Torch.exp.0.forward.py"
    lines = result.stdout.splitlines()
    assert lines[:4] == running(out, script), lines
    note = next(line for line in lines if line.startswith("tested side failed: RuntimeError: "))
    assert "device string: npu" in note, note
    assert not any("verdict" in line for line in lines), lines
    assert ours(result.stderr) == [f"first-overflow: {script} failed: {note}"], result.stderr


def test_first_overflow_fails_when_the_script_exits_otherwise_than_its_report_says(tmp_path):
    """A crash after the reports are written (a library dying at interpreter exit, faked with os._exit(3)): the
    exit status is not the report's, so neither is read as a verdict; the recipe exits with that status."""
    dump = overflowing_dump(tmp_path)
    out = tmp_path / "fo"
    result = dev("first-overflow", dump, out, env=broken_torch_npu(tmp_path, "import atexit, os\n"
                                                                            "atexit.register(os._exit, 3)\n"))
    assert result.returncode == 3, result.stdout[-2000:] + result.stderr[-2000:]
    script = out / "op" / "Torch.exp.0.forward.py"
    lines = result.stdout.splitlines()
    assert lines[:4] == running(out, script) and not any("verdict" in line for line in lines), lines
    assert len(list((out / "op_result_output").glob("accuracy_checking_*.csv"))) == 2
    assert ours(result.stderr) == [
        f"first-overflow: {script} failed with exit status 3, which its report in {out}/op_result_output does not "
        "account for (its messages are above)"], result.stderr


def test_first_overflow_names_a_collective_and_runs_no_script_for_it(tmp_path):
    """Rank 0 alone of a two-rank run (torchrun, gloo): its inf/nan arrives through all_reduce from rank 1, whose
    dump is not there. The recipe names the collective as such and runs no script (op_generate runs one rank's
    kernel; a collective's inf/nan is another rank's data)."""
    dump = tmp_path / "dump"
    script = REPO / "tests" / "overflow" / "dist_overflow_script.py"
    two_ranks(script, dump, "statistics", cwd=tmp_path)
    shutil.rmtree(dump / "step0" / "rank1")
    out = tmp_path / "fo"
    result = dev("first-overflow", dump, out)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    assert result.stdout.splitlines() == [
        "first-overflow: first inf/nan received through a collective: Distributed.all_reduce.1.forward (step0/rank0)",
        "first-overflow: Distributed.all_reduce.1.forward is a collective, not run alone: its inf/nan came from "
        "another rank's data (or from before the dump), not from a kernel of this rank. Dump every rank "
        "(\"rank\": []) and run this again to see where it began"], result.stdout
    [step] = json.loads((out / "overflow.json").read_text())
    assert [(e["op_name"], e["kind"], e["collective"]) for e in step["events"]] == [
        ("Distributed.all_reduce.1.forward", "origin", True)], step
    assert not (out / "op").exists()
