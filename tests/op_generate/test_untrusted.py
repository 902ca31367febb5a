"""A dump or a config from someone else never puts code into the generated script, never names a file outside
``-o``, and is accepted or refused as ``msprobe inspect`` does (issue 40)."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from msprobe.op_generate import apis, generate, parse_op_config
from tests.support.terminal import HOSTILE_ESCAPES, HOSTILE_SHOWN, TERMINAL_CONTROL

PWN = 'x"""+__import__("os").system("touch PWNED")+"""'


def _record(low: float, high: float) -> dict:
    return {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2, 3], "Max": high, "Min": low,
            "Mean": 0.0, "Norm": 1.0, "requires_grad": False}


def _dump(folder: Path, data: dict) -> Path:
    """step0/rank0/dump.json (statistics, pytorch) holding ``data``."""
    path = folder / "step0" / "rank0" / "dump.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({"task": "statistics", "level": "L1", "framework": "pytorch",
                                "dump_data_dir": None, "data": data}, indent=1))
    return path


def _exp(high=1.0) -> dict:
    return {"Torch.exp.0.forward": {"input_args": [_record(-1.0, high)], "input_kwargs": {},
                                    "output": [_record(0.3, 2.7)]}}


def _code_names(script: Path) -> set:
    """Every name and attribute the script's code uses (a string literal holds none)."""
    tree = ast.parse(script.read_text(encoding="utf-8"))
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | \
        {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}


@pytest.mark.parametrize("folder", [PWN, "a\nimport os; os.system('touch PWNED')\n#", "tab\t'\"\\x"])
def test_the_dump_path_is_a_literal_in_the_script(tmp_path, folder):
    dump = _dump(tmp_path / folder, _exp())
    script = generate(parse_op_config({"dump_json_path": str(dump), "api_name": "Torch.exp.0"}), tmp_path / "out")
    names = _code_names(script)
    assert "__import__" not in names and "system" not in names and "os" not in names, names
    sources = [n.value.value for n in ast.parse(script.read_text()).body
               if isinstance(n, ast.Assign) and n.targets[0].id == "SOURCE"]
    assert sources == [str(dump)]
    compile(script.read_text(), str(script), "exec")


@pytest.mark.parametrize("argument", [{"type": "str", "value": PWN}, {"type": "int", "value": PWN},
                                      {"type": "float", "value": PWN}, {"type": "slice", "value": [PWN, 1, None]},
                                      {"type": "torch.Size", "value": [PWN]}, [{"type": "str", "value": PWN}],
                                      {"nested": {"type": "str", "value": "a\nimport os; os.system('x')\n#"}}],
                         ids=["str", "int holding text", "float holding text", "slice", "size", "list", "dict"])
def test_text_from_dump_json_is_a_literal_in_the_script(tmp_path, argument):
    """Any text of dump.json (an argument's value, whatever its claimed type) enters the script as a repr
    literal, never as code (issue 40)."""
    entry = {"input_args": [_record(-1.0, 1.0)], "input_kwargs": {"approximate": argument},
             "output": [_record(-0.2, 1.0)]}
    dump = _dump(tmp_path / "d", {"Functional.gelu.0.forward": entry})
    script = generate(parse_op_config({"dump_json_path": str(dump), "api_name": "Functional.gelu.0"}),
                      tmp_path / "out")
    names = _code_names(script)
    assert "__import__" not in names and "system" not in names and "os" not in names, names
    compile(script.read_text(), str(script), "exec")
    # the text itself is a string constant (a float's text lowercased, as the script spells inf and nan)
    literals = {n.value.lower() for n in ast.walk(ast.parse(script.read_text()))
                if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    assert PWN.lower() in literals or "a\nimport os; os.system('x')\n#" in literals, literals


def test_a_framework_named_in_dump_json_is_checked(tmp_path):
    dump = _dump(tmp_path / "d", _exp())
    dump.write_text(dump.read_text().replace('"pytorch"', json.dumps(PWN)))
    with pytest.raises(apis.MsprobeError) as refused:
        generate(parse_op_config({"dump_json_path": str(dump), "api_name": "Torch.exp.0"}), tmp_path / "out")
    assert "\n" not in str(refused.value) and "framework" in str(refused.value), refused.value
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("api_name", ["Torch.add(__import__('os').system('touch PWNED')) or torch.add.0",
                                      "Torch.exp/../../x.0", "Torch.exp.0\nimport os", "Torch.ex p.0"])
def test_an_api_name_that_is_not_identifiers_is_refused_in_the_config(tmp_path, capsys, cli, api_name):
    dump = _dump(tmp_path / "d", {f"{api_name}.forward": _exp()["Torch.exp.0.forward"]})
    config = tmp_path / "config_op.json"
    config.write_text(json.dumps({"dump_json_path": str(dump), "api_name": api_name}))
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(config) in err and "'api_name'" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config_op.json", "d"]


@pytest.mark.parametrize("with_torch", [True, False])
def test_api_names_are_checked_against_the_table_with_or_without_torch(tmp_path, monkeypatch, with_torch):
    if not with_torch:  # the README's install: no torch where the script is generated
        monkeypatch.setattr(apis, "_torch", lambda: None)
    data = {f"{name}.forward": _exp()["Torch.exp.0.forward"] for name in ("Torch.exp.0", "Torch.save.0",
                                                                       "Torch.system.0", "Tensor.__add__.0",
                                                                       "Tensor.__class__.0")}
    dump = _dump(tmp_path / "d", data)
    made = generate(parse_op_config({"dump_json_path": str(dump), "api_name": "Torch.exp.0"}), tmp_path / "out")
    assert "return torch.exp(*args, **kwargs)" in made.read_text()
    operator = generate(parse_op_config({"dump_json_path": str(dump), "api_name": "Tensor.__add__.0"}),
                        tmp_path / "out")
    assert "return args[0].__add__(*args[1:], **kwargs)" in operator.read_text()
    for name in ("Torch.save.0", "Torch.system.0", "Tensor.__class__.0"):  # no computation of torch's
        with pytest.raises(apis.MsprobeError, match="torch"):
            generate(parse_op_config({"dump_json_path": str(dump), "api_name": name}), tmp_path / "out")
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["Tensor.__add__.0.forward.py",
                                                                    "Torch.exp.0.forward.py"]


def test_from_overflow_never_writes_outside_the_output_folder(tmp_path, capsys, cli):
    entry = {"input_args": [_record(-1.0, 1.0)], "input_kwargs": {}, "output": [_record(0.3, float("inf"))]}
    dump = _dump(tmp_path / "d", {"Torch.exp/../../x.0.forward": entry})
    out = tmp_path / "a" / "out"
    assert cli(["op_generate", "--from-overflow", str(dump.parent), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines()[-1].startswith("msprobe: error: ") and "Traceback" not in err, err
    assert "Torch.exp/../../x.0" in err
    assert not (tmp_path / "a").exists() and sorted(p.name for p in tmp_path.iterdir()) == ["d"]


def test_a_bad_output_folder_is_one_line(tmp_path, capsys, cli):
    dump = _dump(tmp_path / "d", _exp())
    config = tmp_path / "config_op.json"
    config.write_text(json.dumps({"dump_json_path": str(dump), "api_name": "Torch.exp.0"}))
    a_file = tmp_path / "a_file"
    a_file.write_text("mine\n")
    for out, words in ((a_file, "names a file"), (a_file / "sub", "cannot write"),
                       (Path("/proc/1/x"), "cannot write")):
        assert cli(["op_generate", "-i", str(config), "-o", str(out)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.count("\n") == 0 and str(out) in err and words in err, err
    assert a_file.read_text() == "mine\n"


@pytest.mark.parametrize("damage", ["truncated", "bad record in another entry"])
def test_a_dump_inspect_rejects_is_rejected(tmp_path, capsys, cli, damage):
    data = dict(_exp(), **{f"Torch.add.{i}.forward": _exp()["Torch.exp.0.forward"] for i in range(20)})
    dump = _dump(tmp_path / "d", data)
    text = dump.read_text()
    dump.write_text(text[:len(text) * 3 // 4] if damage == "truncated" else
                    text[:len(text) // 2] + text[len(text) // 2:].replace('"dtype": "torch.float32"', '"dtype": 5', 1))
    assert cli(["inspect", "--quiet", str(dump.parent)]) == 2
    capsys.readouterr()
    config = tmp_path / "config_op.json"
    config.write_text(json.dumps({"dump_json_path": str(dump), "api_name": "Torch.exp.0"}))
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and str(dump) in err, err
    assert not (tmp_path / "out").exists()


def test_a_401_digit_statistic_is_read_as_infinity(tmp_path, capsys, cli):
    dump = _dump(tmp_path / "d", _exp(high=10 ** 400))
    config = tmp_path / "config_op.json"
    config.write_text(json.dumps({"dump_json_path": str(dump), "api_name": "Torch.exp.0"}))
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path / "out")]) == 0
    assert "T('float32', (2, 3), -1.0, float('inf'))" in (tmp_path / "out" / "Torch.exp.0.forward.py").read_text()


def test_first_overflow_prints_names_with_their_control_characters_escaped(tmp_path, capsys):
    """`./dev first-overflow`'s report lines quote the dump's names and paths: a terminal escape in them is
    printed as text (as compare, inspect and overflow_check print it)."""
    from msprobe.op_generate import first_overflow

    summary = tmp_path / "overflow.json"
    summary.write_text(json.dumps([{"step": 0}]))
    assert first_overflow.main(["nothing", str(summary), "dump" + HOSTILE_ESCAPES]) == 0
    printed = capsys.readouterr().out
    assert not TERMINAL_CONTROL.search(printed.encode())
    assert printed.strip() == "first-overflow: no inf/nan in dump" + HOSTILE_SHOWN
