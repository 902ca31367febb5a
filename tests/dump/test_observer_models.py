"""The dump is a perfect observer (issue #37): 3 AdamW steps of real models trained under the dump end with the
same bytes as without it: every loss, every gradient of every step, every parameter after the last step.

Models from small configs with random weights (``observer_run.py``): HF Llama (GQA) in every task, level,
summary mode and async_dump setting, with the wider API set (``record_all_apis``, which records the
``Tensor.to`` that once reordered Llama's gradients) and with ``record_nested``; Mixtral, Qwen2-MoE, GPT2,
BERT, T5 and a megatron-core GPT at L0, L1 and mix; Llama under bf16 autocast, with gradient checkpointing,
and under 2-rank DDP (gloo).
Each spec runs its undumped reference once and all its modes in one process; the specs run two at a time.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List

import pytest

from tests.support.ci import imported
from tests.support.torchrun import two_ranks

RUN = Path(__file__).with_name("observer_run.py")
LEVELS = ("L0", "L1", "mix")
TASKS = ({"task": "statistics"}, {"task": "tensor"}, {"task": "statistics", "summary_mode": "md5"},
         {"task": "statistics", "summary_mode": "xor"}, {"task": "overflow_check"})
LLAMA_MODES = [dict(task, level=level, async_dump=on) for level in LEVELS for task in TASKS for on in (False, True)]
LLAMA_MODES += [{"task": "statistics", "level": level, option: True} for option in ("all_apis", "nested")
                for level in ("L1", "mix")]
STATISTICS = [{"task": "statistics", "level": level} for level in LEVELS]
MODELS = ("mixtral", "qwen2_moe", "gpt2", "bert", "t5", "megatron_gpt")
SPECS: Dict[str, Dict[str, Any]] = {
    "llama": {"model": "llama", "modes": LLAMA_MODES},
    **{model: {"model": model, "modes": STATISTICS} for model in MODELS},
    "llama-autocast": {"model": "llama", "autocast": True, "modes": STATISTICS},
    "llama-checkpointing": {"model": "llama", "checkpointing": True, "modes": STATISTICS},
    "llama-ddp": {"model": "llama", "ddp": True, "modes": STATISTICS[1:]},
}


def label(mode: Dict[str, Any]) -> str:
    """observer_run.py's name of a run."""
    return "-".join(str(mode.get(k)) for k in ("task", "level", "summary_mode", "async_dump", "all_apis", "nested"))


def _run(name: str, work: Path) -> List[Dict[str, Any]]:
    """The runs of one spec: [{label: run}] (one per rank)."""
    work.mkdir(parents=True)
    spec = work / "spec.json"
    spec.write_text(json.dumps(SPECS[name]))
    out = work / "runs.json"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    if SPECS[name].get("ddp"):
        two_ranks(RUN, spec, out, env=env, cwd=work, timeout=600)
        return [json.loads(Path(f"{out}.rank{rank}").read_text()) for rank in (0, 1)]
    done = subprocess.run([sys.executable, str(RUN), str(spec), str(out)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    return [json.loads(out.read_text())]


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> Dict[str, Any]:
    """spec name -> its runs, or the exception that stopped them (raised by the tests of that spec)."""
    imported("transformers", module=False)
    root = tmp_path_factory.mktemp("observer")
    with ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {name: pool.submit(_run, name, root / name) for name in SPECS}
    done = {}
    for name, job in jobs.items():
        try:
            done[name] = job.result()
        except BaseException as exc:  # (pytest's failure of a subprocess assertion too)
            done[name] = exc
    return done


def _assert_unchanged(runs: Dict[str, Any], spec: str, mode: Dict[str, Any]) -> None:
    got = runs[spec]
    if isinstance(got, BaseException):
        raise got
    for rank, by_label in enumerate(got):
        undumped, dumped = by_label["undumped"], by_label[label(mode)]
        where = f"{spec} rank {rank} {label(mode)}"
        assert dumped["loss"] == undumped["loss"], f"{where}: losses {dumped['loss']} != {undumped['loss']}"
        for step, (grads, expected) in enumerate(zip(dumped["grads"], undumped["grads"])):
            assert grads.keys() == expected.keys(), f"{where}: step {step} has other gradients"
            changed = [name for name in expected if grads[name] != expected[name]]
            assert not changed, f"{where}: step {step}: gradients of {changed[:3]} differ ({len(changed)} in all)"
        changed = [name for name in undumped["params"] if dumped["params"][name] != undumped["params"][name]]
        assert not changed, f"{where}: after 3 steps {changed[:3]} differ ({len(changed)} in all)"
        if mode["task"] == "overflow_check":
            assert dumped["entries"] == 0, f"{where}: a healthy run has no overflow to record"
        else:  # the dump did record, backward entries included: it watched the gradients it left alone
            assert dumped["entries"] > 0 and dumped["backward"] > 0, where


@pytest.mark.parametrize("mode", LLAMA_MODES, ids=label)
def test_llama_in_every_task_level_and_mode(runs, mode) -> None:
    _assert_unchanged(runs, "llama", mode)


@pytest.mark.parametrize("mode", STATISTICS, ids=label)
@pytest.mark.parametrize("model", MODELS)
def test_moe_encoder_seq2seq_and_megatron_models(runs, model, mode) -> None:
    _assert_unchanged(runs, model, mode)


@pytest.mark.parametrize("mode", STATISTICS, ids=label)
@pytest.mark.parametrize("spec", ("llama-autocast", "llama-checkpointing"))
def test_llama_under_bf16_autocast_and_gradient_checkpointing(runs, spec, mode) -> None:
    _assert_unchanged(runs, spec, mode)


@pytest.mark.parametrize("mode", STATISTICS[1:], ids=label)
def test_llama_under_two_rank_ddp(runs, mode) -> None:
    _assert_unchanged(runs, "llama-ddp", mode)
