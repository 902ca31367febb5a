"""What overflow_check says agrees with ``msprobe inspect`` (issue 31), and its reports never replace each
other (issue 29)."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import torch

from msprobe.overflow import analyze_dump, write_reports
from msprobe.pytorch import PrecisionDebugger, seed_all
from msprobe.pytorch.tiny_model import TinyTransformer, make_batch, train_step
from overflow_builders import api, write_rank
from tests.support.cli import MSPROBE, msprobe
from tests.support.terminal import HOSTILE_ESCAPES, HOSTILE_SHOWN, TERMINAL_CONTROL, printed

def test_masked_attention_dump_counts_agree_and_say_how_to_include_them(tmp_path):
    """The demo's transformer masks attention with -inf: inspect counts those tensors, overflow_check counts
    the same ones, says it left them out and how to include them."""
    seed_all(1234)
    model = TinyTransformer(layers=1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    debugger = PrecisionDebugger(task="statistics", level="L1", dump_path=str(tmp_path / "dump"))
    tokens, targets = make_batch(batch=2, seq=8)
    debugger.start(model=model)
    train_step(model, optimizer, tokens, targets)
    debugger.stop()
    debugger.step()
    debugger.flush()
    inspected = msprobe("inspect", "dump", cwd=tmp_path)
    assert inspected.returncode == 0, inspected.stderr
    counted = int(re.search(r"tensors, (\d+) with inf/nan$", inspected.stdout.strip()).group(1))
    assert counted > 0
    checked = msprobe("overflow_check", "-i", "dump", "-o", "out", cwd=tmp_path)
    assert checked.returncode == 0, checked.stderr
    first, second = checked.stdout.splitlines()[:2]
    assert first == f"step0: 1 rank(s), no overflow found; {counted} tensor(s) hold inf/nan, all left out as expected"
    assert second.startswith("  they begin at Tensor.masked_fill.0.forward: it was given an inf/nan number")
    assert second.endswith("; --include-expected analyses them as overflows")
    assert not (tmp_path / "out").exists()
    included = msprobe("overflow_check", "-i", "dump", "-o", "out", "--include-expected", cwd=tmp_path)
    assert included.returncode == 0, included.stderr
    assert included.stdout.startswith(f"step0: 1 rank(s), 1 with an overflow, {counted} tensor(s) with inf/nan; "
                                      "overflow started on rank at Tensor.masked_fill.0.forward\n")
    [report] = (tmp_path / "out").iterdir()
    assert json.loads(report.read_text())["rank_0"][0]["op_name"] == "Tensor.masked_fill.0.forward"


def _overflowing_rank(rank_dir: Path) -> None:
    big = torch.full((2,), 20.0, dtype=torch.float16)
    write_rank(rank_dir, [("Torch.exp.0.forward", api([big], [torch.exp(big)]))])


def test_reports_written_in_the_same_second_never_replace_each_other(tmp_path, monkeypatch):
    _overflowing_rank(tmp_path / "dump" / "step0" / "rank0")
    results = analyze_dump(tmp_path / "dump")
    monkeypatch.setattr("time.strftime", lambda fmt: "20250101120000")  # two runs within one second
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "anomaly_analyze_20250101120000.json").write_text("a user's earlier report")
    written = [write_reports(results, tmp_path / "out")[0] for _ in range(3)]
    assert [p.name for p in written] == ["anomaly_analyze_20250101120000_1.json",
                                         "anomaly_analyze_20250101120000_2.json",
                                         "anomaly_analyze_20250101120000_3.json"]
    assert (tmp_path / "out" / "anomaly_analyze_20250101120000.json").read_text() == "a user's earlier report"
    assert all(json.loads(p.read_text())["rank_0"][0]["op_name"] == "Torch.exp.0.forward" for p in written)
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.name.startswith(".")) == []


def test_two_runs_at_once_with_the_same_output_leave_two_reports(tmp_path):
    _overflowing_rank(tmp_path / "dump" / "step0" / "rank0")
    procs = [subprocess.Popen([MSPROBE, "overflow_check", "-i", "dump", "-o", "out"], cwd=tmp_path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outputs = [proc.communicate(timeout=300) for proc in procs]
    assert all(proc.returncode == 0 for proc in procs), outputs
    wrote = sorted(line.split("wrote ", 1)[1] for out, _ in outputs for line in out.splitlines()
                   if line.startswith("wrote "))
    assert len(set(wrote)) == 4 and sorted(str(Path("out") / p.name) for p in (tmp_path / "out").iterdir()) == wrote


def test_step01_and_step1_are_two_steps(tmp_path):
    _overflowing_rank(tmp_path / "dump" / "step1" / "rank0")
    _overflowing_rank(tmp_path / "dump" / "step01" / "rank0")
    results = analyze_dump(tmp_path / "dump")
    assert [(r.step_name, len(r.ranks)) for r in results] == [("step01", 1), ("step1", 1)]
    done = msprobe("overflow_check", "-i", "dump", "-o", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert re.findall(r"^(step\d+): 1 rank\(s\), 1 with an overflow", done.stdout, re.M) == ["step01", "step1"]
    assert sorted(p.name.split("_2")[0] for p in (tmp_path / "out").iterdir()) == ["anomaly_analyze_step01",
                                                                                  "anomaly_analyze_step1"]


def _t5_bucket_rank(rank_dir: Path) -> None:
    """T5's relative-position bucket on a healthy run: log(0) = -inf, scaled, then cast away."""
    positions = torch.arange(4.0)
    log = torch.log(positions)
    write_rank(rank_dir, [("Torch.log.0.forward", api([positions], [log])),
                          ("Tensor.__truediv__.0.forward", api([log], [log / 2.0])),
                          ("Tensor.to.0.forward", api([log / 2.0], [torch.zeros(4)]))])


def test_ignore_list_leaves_out_a_listed_api_and_says_so(tmp_path):
    _t5_bucket_rank(tmp_path / "dump" / "step0" / "rank")
    flagged = msprobe("overflow_check", "-i", "dump", "-o", "out", cwd=tmp_path)
    assert flagged.returncode == 0 and "overflow started on rank at Torch.log.0.forward" in flagged.stdout, flagged
    listed = msprobe("overflow_check", "-i", "dump", "-o", "listed", "--ignore", "Torch.log:-inf", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines()[:2] == [
        "step0: 1 rank(s), no overflow found; 4 tensor(s) hold inf/nan, all left out as expected",
        "  they begin at Torch.log.0.forward: it is on the ignore list (Torch.log:-inf); --include-expected "
        "analyses them as overflows"], listed.stdout
    assert not (tmp_path / "listed").exists()
    as_json = msprobe("overflow_check", "-i", "dump", "-o", "listed", "--ignore", "Torch.log:-inf", "--json", cwd=tmp_path)
    assert json.loads(as_json.stdout)[0]["left_out"] == {
        "tensors": 4, "begins_at": "Torch.log.0.forward", "why": "is on the ignore list (Torch.log:-inf)"}
    bad = msprobe("overflow_check", "-i", "dump", "--ignore", "log", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr == (
        "msprobe: error: command line: field '--ignore[0]': expected API[:inf|-inf|nan] (an entry name without its "
        "call count and direction), e.g. Torch.log:-inf, got 'log'\n"), bad.stderr


def test_names_holding_terminal_escape_codes_are_printed_escaped(tmp_path):
    """An entry, module or stack frame of someone else's dump naming ``\\x1b]0;pwn\\x07`` (the terminal's title)
    or ``\\x1b[2J`` (clear the screen) is printed escaped on the console; the JSON report keeps the name as it is."""
    big = torch.full((2,), 20.0, dtype=torch.float16)
    entry, module = f"Torch.exp{HOSTILE_ESCAPES}.0.forward", f"Module.blk{HOSTILE_ESCAPES}.Block.forward.0"
    write_rank(tmp_path / "dump" / "step0" / "rank0", [(entry, api([big], [torch.exp(big)]))],
               construct={entry: module}, stacks={entry: [f"File model{HOSTILE_ESCAPES}.py, line 3, in forward"]})
    code, out, err = printed([MSPROBE, "overflow_check", "-i", "dump", "-o", "out"], tmp_path)
    assert code == 0 and TERMINAL_CONTROL.search(out + err) is None, (out, err)
    said = out.decode()
    assert f"overflow started on rank0 at Torch.exp{HOSTILE_SHOWN}.0.forward" in said, said
    assert f"Module.blk{HOSTILE_SHOWN}.Block.forward.0" in said, said
    assert f"File model{HOSTILE_SHOWN[:-2]} .py, line 3" in said, said  # (a frame's white space, \r too, is one space)
    [report] = (tmp_path / "out").iterdir()
    assert json.loads(report.read_text())["rank_0"][0]["op_name"] == entry
