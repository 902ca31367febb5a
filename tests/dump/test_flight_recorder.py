"""The flight recorder on a tiny HF Llama: a NaN planted at step 37 of 60 steps, a loss spike and a
gradient-norm spike each fire their detector at the right step and name the right module; the ring and the
full dump after it are dumps every tool reads; the training is bit-identical with the recorder on; a clean
200-step run fires nothing; replay reproduces the triggering step."""
from __future__ import annotations

import contextlib
import json

import pytest
import torch

from flight_runs import NAN_MODULE, batch, make_model, planter, reference, ring_steps, same_params, train, triggers
from msprobe.pytorch import PrecisionDebugger
from tests.support.cli import msprobe


@pytest.fixture(scope="module")
def nan_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("nan") / "dump"
    return out, train(out, 60, "nan", 37)


def test_a_planted_nan_fires_at_its_step_naming_its_module(nan_run):
    out, run = nan_run
    first = triggers(out)[0]
    assert (first["detector"], first["step"], first["module"]) == ("inf_nan", 37, NAN_MODULE)
    assert first["ring_steps"] == list(range(22, 38)) == ring_steps(out / "trigger0")
    assert (first["capture_steps"], first["capture_dir"], first["capture_error"]) == ([38], "capture", None)
    # the NaN stays in the weights: later steps fire too, each with its own folder, up to max_triggers (3)
    assert [t["step"] for t in triggers(out)] == [37, 38, 39]
    assert not (out / "trigger3").exists()
    # beyond max_triggers every later step fires again: the latest 16 are kept, all of them counted
    met = run.kept["debugger"].triggers()
    assert [t.step for t in met] == [37, 38, 39] + list(range(44, 60))
    assert run.kept["debugger"].engine.beyond_count == 20


def test_the_step_after_the_trigger_is_fully_dumped(nan_run):
    out, _ = nan_run
    dump = json.loads((out / "trigger0" / "capture" / "step38" / "rank" / "dump.json").read_text())
    assert (dump["task"], dump["level"]) == ("statistics", "mix")
    names = list(dump["data"])
    assert any(n.startswith("Functional.linear.") for n in names)  # APIs (L1) ...
    assert any(n.startswith("Module.model.layers.1.mlp.") and ".backward." in n for n in names)  # ... modules, backward


def test_the_ring_reads_as_a_dump_with_inspect_and_overflow_check(nan_run, tmp_path):
    out, _ = nan_run
    shown = msprobe("inspect", out / "trigger0", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "total: 16 rank dump(s)" in shown.stdout and NAN_MODULE in shown.stdout
    found = msprobe("overflow_check", "-i", out / "trigger0", "-o", tmp_path / "ovf", cwd=tmp_path)
    assert found.returncode == 0, found.stderr
    assert "step37: 1 rank(s), 1 with an overflow" in found.stdout
    assert f"overflow started on rank at {NAN_MODULE}" in found.stdout


def test_compare_of_the_ring_against_a_clean_l0_dump_names_the_module(nan_run, tmp_path):
    out, _ = nan_run
    clean = tmp_path / "clean"
    model = make_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(clean), step=[37])
    for step in range(38):
        debugger.start(model=model)
        loss = model(input_ids=batch(step), labels=batch(step)).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), float("inf"))
        optimizer.step()
        optimizer.zero_grad()
        debugger.stop()
        debugger.step()
    done = msprobe("compare", "-tp", out / "trigger0" / "step37" / "rank", "-gp", clean / "step37" / "rank",
                   "-o", tmp_path / "cmp", "--json", "--no-xlsx", "-q", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert NAN_MODULE in done.stdout


def test_the_training_is_bit_identical_with_the_recorder_on(nan_run, tmp_path, reference):
    _, on = nan_run
    off = reference(60, "nan", 37)
    assert [repr(x) for x in on.losses] == [repr(x) for x in off.losses]
    assert same_params(on, off)  # (NaN weights from step 37 on: compared bit for bit)
    # a run that fires and captures (hooks of a mix dump beside the ring's) and stays finite: every weight
    spiked_on = train(tmp_path / "on", 40, "loss", 30, {"spike_warmup": 20})
    spiked_off = reference(40, "loss", 30)
    assert triggers(tmp_path / "on")[0]["step"] == 30
    assert spiked_on.losses == spiked_off.losses
    for name, value in spiked_off.params.items():
        assert torch.equal(spiked_on.params[name], value), name


@pytest.mark.parametrize("fault, detector", [("loss", "loss_spike"), ("grad", "grad_norm_spike")])
def test_a_spike_fires_its_detector(fault, detector, tmp_path):
    out = tmp_path / "dump"
    train(out, 34, fault, 30, {"spike_warmup": 20, "capture_steps": 0})
    first = triggers(out)[0]
    assert (first["detector"], first["step"], first["module"]) == (detector, 30, None)
    assert first["value"] >= first["threshold"] > 0
    assert first["ring_steps"] == list(range(15, 31)) and first["capture_steps"] == []


def test_the_loss_from_step_takes_the_place_of_the_root_output(tmp_path):
    out = tmp_path / "dump"
    train(out, 26, "loss", 22, {"spike_warmup": 20, "grad_norm_spike": False}, give_loss=True)
    assert [(t["detector"], t["step"]) for t in triggers(out)] == [("loss_spike", 22)]


@pytest.mark.slow
def test_a_clean_run_of_200_steps_fires_nothing(tmp_path, capfd):
    out = tmp_path / "dump"
    train(out, 200)
    assert not out.exists() or not list(out.iterdir())
    assert "flight recorder" not in capfd.readouterr().err


def test_replay_reproduces_the_triggering_step(tmp_path, monkeypatch):
    # an earlier test in this process may have called seed_all, which makes dropout the identity for good
    dropout = torch.nn.functional.dropout
    monkeypatch.setattr(torch.nn.functional, "dropout", getattr(dropout, "__wrapped__", dropout))
    out = tmp_path / "dump"
    run = train(out, 32, "loss", 30, {"spike_warmup": 20, "capture_steps": 0}, dropout=0.5, keep_at=30)
    assert triggers(out)[0]["step"] == 30
    recorded = json.loads((out / "trigger0" / "step30" / "rank" / "dump.json").read_text())["data"]

    def rerun(where, replayed):
        model = make_model(dropout=0.5)
        model.load_state_dict(run.kept["state"])
        planter(model, "loss", 30, {"step": 30})
        debugger = PrecisionDebugger(task="statistics", level="L0", dump_path=str(where), step=[0])
        before = torch.get_rng_state()
        with run.kept["debugger"].replay() if replayed else contextlib.nullcontext():
            debugger.start(model=model)
            model(input_ids=batch(30), labels=batch(30))
            debugger.stop()
            debugger.step()
        if replayed:  # the generators are set back on leaving replay(): the training goes on as it was
            assert torch.equal(torch.get_rng_state(), before)
        return json.loads((where / "step0" / "rank" / "dump.json").read_text())["data"]

    again = rerun(tmp_path / "replayed", True)
    for name, entry in recorded.items():
        assert again[name]["output"] == entry["output"], name
    differs = rerun(tmp_path / "not_replayed", False)  # without it the dropout masks differ
    assert any(differs[name]["output"] != entry["output"] for name, entry in recorded.items())


def test_no_finite_value_is_mistaken_for_a_spike_during_warm_up(tmp_path):
    out = tmp_path / "dump"
    train(out, 12, "loss", 5, {"spike_warmup": 20, "inf_nan": False})
    assert triggers(out) == []


def test_the_full_dump_after_a_trigger_takes_its_task_level_and_steps(tmp_path):
    out = tmp_path / "dump"
    train(out, 25, "loss", 22, {"spike_warmup": 20, "capture_steps": 2, "capture_task": "tensor",
                                "capture_level": "L0", "grad_norm_spike": False})
    assert triggers(out)[0]["capture_steps"] == [23, 24]
    for step in (23, 24):
        rank = out / "trigger0" / "capture" / f"step{step}" / "rank"
        dump = json.loads((rank / "dump.json").read_text())
        assert (dump["task"], dump["level"]) == ("tensor", "L0")
        assert all(name.startswith("Module.") for name in dump["data"])
        assert len(list((rank / "dump_tensor_data").glob("*.pt"))) > 20
    assert not (out / "trigger0" / "capture" / "step25").exists()
