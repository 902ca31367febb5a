"""The flight recorder's configuration, its cost (on a device one transfer per step, read a step later: a fake
device adapter counts them; no module parameters gathered for the ring), and its faults: a full disk or a kill
while the ring is written leave the training unharmed and the files whole or absent; a full dump after a trigger
that cannot start still leaves the trigger's trigger.json, saying why."""
from __future__ import annotations

import errno
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from flight_runs import NAN_MODULE, reference, ring_steps, same_params, train, triggers
from msprobe.dump.flight_recorder import FlightRecorder
from msprobe.pytorch import PrecisionDebugger, hooks, stats
from msprobe.pytorch.adapter import TorchAdapter
from msprobe.pytorch.flight_recorder import RecorderAdapter, TorchRecorderHost, TorchTransfer
from msprobe.schema import MsprobeError, SchemaError, config_to_json, find_rank_dirs, load_config, parse_config
from msprobe.schema import rank_writer
from msprobe.schema.flight_recorder import FlightRecorderConfig
from tests.support.ci import unavailable


def test_options_default_and_read_back(tmp_path):
    config = parse_config({"task": "flight_recorder"})
    assert config.task_config.recorder == FlightRecorderConfig()
    assert (FlightRecorderConfig().ring_steps, FlightRecorderConfig().spike_factor) == (16, 10.0)
    block = {"ring_steps": 4, "loss_spike": False, "spike_factor": 5, "spike_warmup": 7, "capture_steps": 2,
             "capture_task": "tensor", "capture_level": "L1", "max_triggers": 1, "list": ["mlp"]}
    config = parse_config({"task": "flight_recorder", "flight_recorder": block})
    recorder = config.task_config.recorder
    assert (recorder.ring_steps, recorder.loss_spike, recorder.spike_factor, recorder.capture_task) == (4, False, 5.0, "tensor")
    assert config.task_config.list == ("mlp",)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config_to_json(config)))
    assert load_config(path) == parse_config(config_to_json(config), str(path))
    assert parse_config({"task": "statistics"}).task_config.recorder is None


@pytest.mark.parametrize("block, field", [({"ring_steps": 0}, "flight_recorder.ring_steps"),
                                          ({"spike_factor": 1}, "flight_recorder.spike_factor"),
                                          ({"capture_level": "L2"}, "flight_recorder.capture_level"),
                                          ({"inf_nan": "yes"}, "flight_recorder.inf_nan"),
                                          ({"ring_step": 3}, "flight_recorder.ring_step")])
def test_a_wrong_option_is_one_line_naming_file_and_field(block, field):
    with pytest.raises(SchemaError) as raised:
        parse_config({"task": "flight_recorder", "flight_recorder": block}, "cfg.json")
    assert "cfg.json" in str(raised.value) and field in str(raised.value) and "\n" not in str(raised.value)
    with pytest.raises(SchemaError):  # the recorder's options belong to its block only
        parse_config({"task": "statistics", "statistics": {"ring_steps": 3}}, "cfg.json")


def test_the_ignore_list_is_overflow_checks(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "flight_recorder", "dump_path": str(tmp_path / "dump"),
                                  "flight_recorder": {"ignore": ["Torch.log:-inf", "log"]}}))
    with pytest.raises(SchemaError) as raised:  # checked by overflow_check's own parser, with its words
        PrecisionDebugger(config_path=str(config))
    assert str(config) in str(raised.value) and "flight_recorder.ignore[1]" in str(raised.value)


def test_a_dump_path_holding_earlier_triggers_is_refused(tmp_path):
    (tmp_path / "dump" / "trigger0").mkdir(parents=True)
    with pytest.raises(MsprobeError, match="already holds a flight recorder's 'trigger0'"):
        PrecisionDebugger(task="flight_recorder", dump_path=str(tmp_path / "dump"))
    with pytest.raises(MsprobeError, match="needs task flight_recorder"):
        PrecisionDebugger(task="statistics", dump_path=str(tmp_path / "other")).replay()


def test_a_rank_building_its_debugger_after_another_rank_fired_is_not_refused(tmp_path):
    """Ranks check only their own trigger files: rank 1 of this run fired before rank 0 made its debugger."""
    from msprobe.dump.flight_recorder.files import check_no_triggers

    fired = tmp_path / "dump" / "trigger0"
    fired.mkdir(parents=True)
    (fired / "trigger_rank1.json").write_text("{}")
    check_no_triggers(str(tmp_path / "dump"), "cfg.json", 0)  # another rank's trigger: this run's
    with pytest.raises(MsprobeError, match="already holds a flight recorder's 'trigger0'"):
        check_no_triggers(str(tmp_path / "dump"), "cfg.json", 1)  # this rank's own: an earlier run


def test_a_non_finite_value_is_strict_json_in_trigger_json(tmp_path):
    from msprobe.dump.flight_recorder.files import write_trigger
    from msprobe.dump.flight_recorder.rules import Trigger

    path = write_trigger(str(tmp_path), Trigger("inf_nan", 3, "loss", float("nan")), [3], [4], None)
    text = Path(path).read_text()
    assert json.loads(text, parse_constant=lambda token: pytest.fail(f"{token} in {text}"))["value"] == "nan"


class FakeDevice(RecorderAdapter):
    """Every tensor a device tensor (statistics left as 0-d tensors); ``stats_to_host`` would be a sync."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.synced = 0

    def tensor_stats(self, tensor, precision, md5):
        return stats.reduce_on_device(tensor, precision, md5)

    def ready_stats(self, handle):
        return None

    def stats_to_host(self, handles):
        self.synced += 1
        return super().stats_to_host(handles)


class InFlight(TorchTransfer):
    """A copy still in flight when ``step()`` returns: the recorder must read it at the next step."""

    def done(self) -> bool:
        return False


class CountingHost(TorchRecorderHost):
    def __init__(self) -> None:
        super().__init__(lambda config: TorchAdapter())
        self.transfers = []

    def transfer(self, handles, scalars):
        self.transfers.append(len(handles))
        return InFlight(handles, scalars)


class FakeDeviceDebugger(PrecisionDebugger):
    def _make_adapter(self, config):
        return FakeDevice(config.api_list, config.record_nested)

    def _make_engine(self, config, tasks):
        return FlightRecorder(config, self.adapter, CountingHost())


def test_on_a_device_one_transfer_per_step_read_a_step_later(tmp_path):
    out = tmp_path / "dump"
    run = train(out, 10, "nan", 5, {"ring_steps": 4, "max_triggers": 1}, debugger_class=FakeDeviceDebugger)
    debugger = run.kept["debugger"]
    assert debugger.adapter.synced == 0  # no batch of the dump's own: the statistics wait for the step's copy
    transfers = debugger.engine.host.transfers  # (handles per transfer: every module output of the step)
    assert len(transfers) == 10 and len(set(transfers)) == 1 and transfers[0] > 30
    first = triggers(out)[0]
    assert (first["step"], first["module"], first["ring_steps"]) == (5, NAN_MODULE, [2, 3, 4, 5])
    assert first["capture_steps"] == [7]  # read during step 6's step(): the full dump begins at step 7
    cpu = tmp_path / "cpu"
    train(cpu, 10, "nan", 5, {"ring_steps": 4, "max_triggers": 1})
    device = json.loads((out / "trigger0" / "step4" / "rank" / "dump.json").read_text())["data"]
    host = json.loads((cpu / "trigger0" / "step4" / "rank" / "dump.json").read_text())["data"]
    assert list(device) == list(host)
    for name, entry in host.items():
        for got, want in zip(device[name]["output"], entry["output"]):
            if isinstance(want, dict) and "Max" in want:
                assert got["Max"] == pytest.approx(want["Max"], rel=1e-5, abs=1e-6), name
                assert got["Norm"] == pytest.approx(want["Norm"], rel=1e-4, abs=1e-6), name


def test_the_hooks_gather_no_parameters_for_the_ring(monkeypatch, tmp_path):
    """The ring holds module outputs only: its hooks leave the parameters alone (gathering them is a pass at every
    module call), while the full dump after a trigger (mix) records them as every dump does."""
    gathered = []
    own_parameters = hooks._own_parameters

    def counted(module):
        found = own_parameters(module)
        gathered.append(bool(found))
        return found

    monkeypatch.setattr(hooks, "_own_parameters", counted)
    out = tmp_path / "dump"
    train(out, 24, "loss", 22, {"spike_warmup": 20, "grad_norm_spike": False})
    for step in range(7, 23):
        ring = json.loads((out / "trigger0" / f"step{step}" / "rank" / "dump.json").read_text())["data"]
        assert ring and not any("parameters" in entry for entry in ring.values()), step
    capture = json.loads((out / "trigger0" / "capture" / "step23" / "rank" / "dump.json").read_text())["data"]
    recorded = [name for name, entry in capture.items() if "parameters" in entry]
    assert len(recorded) > 10 and sum(gathered) == len(recorded)  # every module's parameters gathered: the capture's


def test_a_full_disk_while_the_ring_is_written(monkeypatch, tmp_path, capfd, reference):
    def disk_full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(rank_writer, "write_bytes_atomic", disk_full)
    out = tmp_path / "dump"
    on = train(out, 45, "nan", 37)
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("msprobe")]
    assert len(lines) == 1 and "No space left on device" in lines[0] and "step 37" in lines[0], lines
    assert not list(out.rglob("*.json"))  # nothing half-written: the steps' folders went whole
    off = reference(45, "nan", 37)
    assert [repr(x) for x in on.losses] == [repr(x) for x in off.losses]


class NoCaptureHost(TorchRecorderHost):
    """The full dump after a trigger cannot start: its adapter is refused, as a folder it may not write would be."""

    def __init__(self) -> None:
        super().__init__(self.refuse)

    @staticmethod
    def refuse(config):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), config.dump_path)


class NoCaptureDebugger(PrecisionDebugger):
    def _make_engine(self, config, tasks):
        return FlightRecorder(config, self.adapter, NoCaptureHost())


def test_a_capture_that_cannot_start_still_writes_trigger_json(tmp_path, capfd, reference):
    out = tmp_path / "dump"
    on = train(out, 45, "nan", 37, debugger_class=NoCaptureDebugger)
    text = (out / "trigger0" / "trigger.json").read_text()
    first = json.loads(text, parse_constant=lambda token: pytest.fail(f"{token} in {text}"))  # strict JSON
    assert (first["detector"], first["step"], first["module"]) == ("inf_nan", 37, NAN_MODULE)
    assert first["ring_steps"] == list(range(22, 38)) == ring_steps(out / "trigger0")
    capture = out / "trigger0" / "capture"
    assert (first["capture_steps"], first["capture_dir"]) == ([], None) and not capture.exists()
    assert first["capture_error"] == f"PermissionError: [Errno {errno.EACCES}] {os.strerror(errno.EACCES)}: '{capture}'"
    # the recorder goes on: the NaN left in the weights fires the next steps, each told the same way
    assert [(t["step"], t["capture_error"] is not None) for t in triggers(out)] == [(37, True), (38, True), (39, True)]
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("msprobe")]
    assert len(lines) == 4 and not any(line.startswith("msprobe: error:") for line in lines), lines
    assert lines[0].endswith(f"(trigger.json); the full dump after it did not start: {first['capture_error']}")
    off = reference(45, "nan", 37)  # and the training is the one without the recorder, bit for bit
    assert [repr(x) for x in on.losses] == [repr(x) for x in off.losses] and same_params(on, off)


KILLED = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from pathlib import Path
from msprobe.schema import rank_writer
import flight_runs
written = []
finish = rank_writer.RankWriter.finish
def finish_then_die(self, durable=False):
    if len(written) == 5:
        os.kill(os.getpid(), signal.SIGKILL)  # in the middle of the ring: 5 steps written, the 6th journaled
    written.append(1)
    return finish(self, durable)
rank_writer.RankWriter.finish = finish_then_die
flight_runs.train(Path({out!r}), 40, "nan", 37)
"""


def test_a_kill_while_the_ring_is_written_leaves_whole_files(tmp_path):
    out = tmp_path / "dump"
    script = KILLED.format(tests=str(Path(__file__).parent), out=str(out))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=Path(__file__).parents[2])
    assert done.returncode == -9, done.stderr
    trigger = out / "trigger0"
    assert not (trigger / "trigger.json").exists()  # written last: the trigger is known incomplete
    assert ring_steps(trigger) == list(range(22, 27))
    for path in trigger.rglob("*.json"):
        json.loads(path.read_text())  # whole
    ranks = find_rank_dirs(trigger)
    assert len(ranks) == 6 and all(len(r.load().dump.data) > 0 for r in ranks)  # the 6th from its journal


@pytest.mark.slow  # (tracemalloc slows every allocation of 51 training steps)
def test_memory_is_bounded_by_the_ring(tmp_path):
    import tracemalloc

    from flight_runs import batch, make_model

    model = make_model()
    debugger = PrecisionDebugger(task="flight_recorder", dump_path=str(tmp_path / "dump"))

    def steps(first, count):
        for step in range(first, first + count):
            debugger.start(model=model)
            model(input_ids=batch(step), labels=batch(step)).loss.backward()
            debugger.stop()
            debugger.step()

    steps(0, 3)  # (caches of the first steps)
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        steps(3, 16)
        filled = tracemalloc.get_traced_memory()[0]
        steps(19, 32)
        later = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    entries = sum(len(slot.entries) for slot in debugger.engine.ring)
    assert len(debugger.engine.ring) == 16 and entries == 16 * 31
    assert (filled - before) / entries < 4096  # a record per module output, a few hundred bytes each
    assert later - filled < (filled - before) / 4  # a full ring replaces its oldest step: no growth


def test_start_needs_the_model(tmp_path):
    debugger = PrecisionDebugger(task="flight_recorder", dump_path=str(tmp_path / "dump"))
    with pytest.raises(MsprobeError, match="level L0 records modules"):  # the ring's level, whatever the file's
        debugger.start()


def test_replay_of_a_step_the_ring_holds_and_of_one_it_does_not(tmp_path):
    debugger = train(tmp_path / "dump", 5, options={"ring_steps": 3}).kept["debugger"]
    with pytest.raises(MsprobeError, match="has not fired"):
        debugger.replay()
    with pytest.raises(MsprobeError, match=r"step 1 is neither a trigger's nor in the ring \(steps 2-4\)"):
        debugger.replay(step=1)
    with debugger.replay(step=3):
        assert torch.equal(torch.get_rng_state(), debugger.engine.ring[1].rng[0])


class Unreadable:
    """A model output whose ``loss`` cannot be read (a property that raises, not an AttributeError)."""

    def __init__(self, logits):
        self.logits = logits

    @property
    def loss(self):
        raise RuntimeError("this loss is computed elsewhere")


class UnreadableLoss(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(4, 4)

    def forward(self, x):
        return Unreadable(self.linear(x))


def test_an_error_in_the_root_output_hook_stops_the_recorder_not_the_training(tmp_path, capfd):
    torch.manual_seed(0)
    model = UnreadableLoss()
    debugger = PrecisionDebugger(task="flight_recorder", dump_path=str(tmp_path / "dump"))
    for step in range(3):
        debugger.start(model=model)
        output = model(torch.ones(2, 4))  # the hook fails inside: the engine's guard keeps it from the training
        output.logits.sum().backward()
        debugger.stop()
        debugger.step()
    assert isinstance(output, Unreadable) and model.linear.weight.grad is not None
    lines = [line for line in capfd.readouterr().err.splitlines() if line.startswith("msprobe")]
    assert lines == ["msprobe: error: dump stopped at step 0 while reading the loss output of UnreadableLoss: "
                     "RuntimeError: this loss is computed elsewhere; the training continues without it (files "
                     "written before stay readable)"]
    assert debugger.engine.finished and not debugger.triggers()


MINDSPORE = """
import json, sys
from msprobe.mindspore import PrecisionDebugger
said = []
for kwargs in ({"task": "flight_recorder", "dump_path": sys.argv[1]}, {"config_path": sys.argv[2]}):
    try:
        PrecisionDebugger(**kwargs)
        said.append(None)
    except Exception as exc:
        said.append([type(exc).__name__, str(exc)])
print(json.dumps(said))
"""


def test_mindspore_refuses_the_task_in_one_line(tmp_path):
    if importlib.util.find_spec("mindspore") is None:  # (imported in a process of its own below)
        unavailable("mindspore is not installed")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"task": "flight_recorder", "dump_path": str(tmp_path / "dump2")}))
    done = subprocess.run([sys.executable, "-c", MINDSPORE, str(tmp_path / "dump"), str(config)], capture_output=True,
                          text=True, timeout=300, cwd=tmp_path)  # (a process of its own: MindSpore beside no torch)
    assert done.returncode == 0, done.stderr
    given, from_file = json.loads(done.stdout.splitlines()[-1])
    assert given == ["MsprobeError", "PrecisionDebugger(): field 'task': flight_recorder is available for PyTorch only"]
    assert from_file[0] == "MsprobeError" and str(config) in from_file[1] and "\n" not in from_file[1]
    assert from_file[1].endswith("field 'task': flight_recorder is available for PyTorch only")
    assert not (tmp_path / "dump").exists() or not list((tmp_path / "dump").rglob("*.json"))
