"""The span engine: any span size and thread count gives torch's numbers; no torch needed; the progress bar."""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest
import torch

from msprobe.ckpt_compare import writer
from msprobe.ckpt_compare.compare import run
from msprobe.ckpt_compare.options import CompareOptions
from tests.support.cli import MSPROBE, msprobe
from tests.support.terminal import on_a_terminal

TIGHT = [CompareOptions(progress=False, span_bytes=4096, workers=3, readahead_bytes=8192),
         CompareOptions(progress=False, span_bytes=100, workers=1)]  # below one row: one row per span


PERTURBED = ("decoder.layers.2.mlp.linear_fc1.weight", "decoder.layers.1.input_layernorm.weight")


def _numbers(report):
    return {name: (e["l2"], e["cos"]) for name, e in report.entries.items()}


@pytest.mark.parametrize("left,right", [("real_tp2pp2", "perturbed_tp1"), ("te_tp4", "perturbed_tp2pp2"),
                                        ("real_dist_tp2pp2", "perturbed_tp2pp2")])
def test_any_span_size_and_thread_count_gives_the_same_numbers(layouts, left, right):
    """Row-split (TP on dim 1), dim-0 split and torch_dist pieces, spans down to one row."""
    reference = _numbers(run(layouts[left], layouts[right], CompareOptions(progress=False)))
    for options in TIGHT:
        numbers = _numbers(run(layouts[left], layouts[right], options))
        assert numbers.keys() == reference.keys()
        for name, (l2, cos) in numbers.items():
            if name in PERTURBED:
                assert l2 > 0  # (the norm is scaled by 1.5: its cos stays 1)
            else:
                assert (l2, cos) == (0.0, 1.0), name
            assert l2 == pytest.approx(reference[name][0], rel=1e-12, abs=1e-15)
            assert cos == pytest.approx(reference[name][1], rel=1e-12)


def test_vocabulary_padding_with_tight_spans(layouts, full, tmp_path):
    other = dict(full["dense"])
    emb = other["embedding.word_embeddings.weight"]
    other["embedding.word_embeddings.weight"] = torch.cat([emb, torch.zeros(64, emb.shape[1])])
    args = argparse.Namespace(num_layers=4, swiglu=True)
    writer.write_megatron(tmp_path / "padded", other, args, tp=2, split_dims=full["dense_dims"], gated=True)
    for options in TIGHT:
        entry = run(layouts["core_tp1"], tmp_path / "padded", options).entries["embedding.word_embeddings.weight"]
        assert (entry["l2"], entry["cos"]) == (0.0, 1.0) and "256 vs 320" in entry["note"]


_NO_TORCH = "import sys; sys.modules['torch'] = None; "


def test_comparison_and_demo_without_torch(layouts, tmp_path):
    out = tmp_path / "r.json"
    code = _NO_TORCH + "from msprobe.cli.main import main; main(sys.argv[1:])"
    done = subprocess.run([sys.executable, "-c", code, "-f", "pytorch", "config_check", "-c",
                           str(layouts["real_tp2pp2"]), str(layouts["dist"]), "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(out.read_text())) == 43 and "worst cos: 1.000000" in done.stdout
    # its demo part without torch: the demo's runner skips it as every part (tests/shared/test_demo.py)
    demo = _NO_TORCH + ("from msprobe.ckpt_compare.demo import run; from msprobe.cli.demo import DemoContext, "
                        "_run_part; print(_run_part(DemoContext(out_dir=sys.argv[1], framework=None), 'c', run))")
    done = subprocess.run([sys.executable, "-c", demo, str(tmp_path / "demo")], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["  skipped: torch is not installed (pip install torch)", "skipped"]


def test_progress_bar_on_a_terminal_only(layouts, tmp_path):
    argv = ["-f", "pytorch", "config_check", "-c", str(layouts["core_tp1"]), str(layouts["real_tp2pp2"])]
    code, shown = on_a_terminal([MSPROBE, *argv, "-o", tmp_path / "a.json"], tmp_path)
    assert code == 0 and "comparing" in shown and "100%" in shown and "\x1b[" in shown
    code, quiet = on_a_terminal([MSPROBE, *argv, "-o", tmp_path / "b.json", "--quiet"], tmp_path)
    assert code == 0 and "comparing" not in quiet
    piped = msprobe(*argv, "-o", tmp_path / "c.json")
    assert piped.returncode == 0 and piped.stderr == "" and "\x1b" not in piped.stdout
