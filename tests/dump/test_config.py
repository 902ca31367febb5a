"""Bad configuration: one line naming the field; the debugger's own argument checks."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from msprobe.pytorch import PrecisionDebugger
from msprobe.schema import MsprobeError, SchemaError


@pytest.mark.parametrize("doc, field", [
    ({"task": "overflow"}, "task"),
    ({"level": "L3"}, "level"),
    ({"step": ["x"]}, "step"),
    ({"rank": -1}, "rank"),
    ({"async_dump": "yes"}, "async_dump"),
    ({"statistics": {"summary_mode": "sha"}}, "statistics.summary_mode"),
    ({"statistics": {"data_mode": ["sideways"]}}, "statistics.data_mode"),
    ({"statistics": {"scope": "Module.x"}}, "statistics.scope"),
    ({"dump_pth": "x"}, "dump_pth"),
])
def test_bad_config_value_is_one_line_naming_the_field(tmp_path, doc, field):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(SchemaError) as info:
        PrecisionDebugger(config_path=str(path))
    message = str(info.value)
    assert "\n" not in message and f"field '{field}'" in message and str(path) in message


def test_constructor_arguments_are_checked_and_override_the_file(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"task": "tensor", "level": "L0", "dump_path": "a", "step": [3]}))
    debugger = PrecisionDebugger(config_path=str(path), task="statistics", level="L1", dump_path=str(tmp_path / "b"),
                                 step=[0, 1])
    assert (debugger.config.task, debugger.config.level, debugger.config.step) == ("statistics", "L1", (0, 1))
    with pytest.raises(SchemaError, match="field 'level'"):
        PrecisionDebugger(level="L9")


def test_default_config_without_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    debugger = PrecisionDebugger()
    assert (debugger.config.task, debugger.config.level, debugger.config.dump_path) == ("statistics", "L1",
                                                                                         "./dump_path")


def test_model_required_for_module_levels(tmp_path):
    debugger = PrecisionDebugger(level="L0", dump_path=str(tmp_path))
    with pytest.raises(MsprobeError, match="argument 'model'"):
        debugger.start()
    with pytest.raises(MsprobeError, match="argument 'model'"):
        debugger.start(model="not a module")


def test_bad_api_list(tmp_path):
    ops = tmp_path / "ops.yaml"
    ops.write_text("functionl:\n  - relu\n")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"api_list": str(ops)}))
    with pytest.raises(SchemaError, match="field 'functionl'"):
        PrecisionDebugger(config_path=str(config))


def test_missing_task_plugin_is_a_clear_error(tmp_path, monkeypatch):
    # overflow_check comes from tools/overflow; when it is not installed the message says so
    import msprobe.schema.plugins as plugins

    monkeypatch.setattr(plugins, "entry_points", lambda group: [])
    with pytest.raises(MsprobeError, match="overflow_check"):
        PrecisionDebugger(task="overflow_check", dump_path=str(tmp_path))


def test_user_error_in_a_script_is_one_line_not_a_traceback(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("from msprobe.pytorch import PrecisionDebugger\nPrecisionDebugger(level='L7')\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert done.returncode != 0
    assert "field 'level': expected one of L0, L1, mix, got 'L7'" in done.stderr.splitlines()[-1]
