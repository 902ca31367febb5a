"""The `msprobe` command as users run it: help, version, -f, inspect, errors and exit codes."""
from __future__ import annotations

import json
import os

import pytest

from msprobe.cli.terminal import printable
from msprobe.schema import RankWriter
from tests.support.cli import MSPROBE, assert_one_line_error, msprobe
from tests.support.terminal import HOSTILE_ESCAPES, HOSTILE_SHOWN, TERMINAL_CONTROL, on_a_terminal, printed


def test_help_version_and_framework_styles(upstream_dump):
    helped = msprobe("--help")
    assert helped.returncode == 0 and "inspect" in helped.stdout and "config_check" in helped.stdout
    assert msprobe("--version").stdout.strip().startswith("msprobe ")
    sample = str(upstream_dump())
    old_style, new_style = msprobe("-f", "pytorch", "inspect", sample), msprobe("inspect", sample)
    assert old_style.returncode == new_style.returncode == 0 and old_style.stdout == new_style.stdout
    bad = msprobe("-f", "jax", "inspect", sample)
    assert bad.returncode == 2 and bad.stderr == ("msprobe: error: Invalid value for '-f' / '--framework': expected "
                                                  "one of pytorch, mindspore, got 'jax' (see 'msprobe -h')\n")


def test_inspect_summarises_upstream_dump(upstream_dump):
    path = upstream_dump() / "step0" / "rank0" / "dump.json"
    result = msprobe("inspect", str(path))
    assert result.returncode == 0, result.stderr
    assert "framework: pytorch" in result.stdout and "Distributed=" in result.stdout
    summary = json.loads(msprobe("inspect", "--json", str(path)).stdout)
    assert summary[0]["entries"] == len(json.loads(path.read_text())["data"])


def test_inspect_reports_malformed_input_in_one_line(peer_fixtures, tmp_path):
    for target, reason in [
        (peer_fixtures / "test/msprobe_test/visualization_ut/input", "step directory inside a step directory"),
        (peer_fixtures / "test/msprobe_test/resources/common/test_backward.json", "field 'data.Module'"),
        (tmp_path / "nothing", "no such file or directory"),
    ]:
        assert_one_line_error(msprobe("inspect", str(target)), reason)


def test_inspect_reads_an_interrupted_run_and_counts_inf_nan(tmp_path):
    writer = RankWriter(tmp_path / "dump" / "step0" / "rank0", {"task": "statistics", "level": "L1",
                                                               "framework": "pytorch", "dump_data_dir": None})
    tensor = {"type": "torch.Tensor", "dtype": "torch.float16", "shape": [2], "Max": float("inf"), "Min": 1.0,
              "Mean": float("nan"), "Norm": float("inf"), "requires_grad": False}
    writer.entry("Torch.exp.0.forward", {"input_args": [dict(tensor, Max=12.0, Mean=1.0, Norm=2.0)],
                                         "input_kwargs": {}, "output": [tensor]})
    result = msprobe("inspect", str(tmp_path / "dump"))  # never finalized: as after a SIGKILL
    assert result.returncode == 0, result.stderr
    assert "recovered from the journal" in result.stdout and "Torch.exp.0.forward: output.0" in result.stdout
    assert "1 with inf/nan" in result.stdout


def test_printable_escapes_what_a_terminal_would_act_on_and_nothing_else():
    # C0 and C1 controls (\x9b is an 8-bit CSI), a bidi override, a lone surrogate; text of any script stays
    assert printable("a\x1b[2J\x07\x9b\u202eb\udc80\t\n") == "a\\x1b[2J\\x07\\x9b\\u202eb\\udc80\\t\\n"
    assert printable("Torch.exp.0.forward 中文 é \\x1b") == "Torch.exp.0.forward 中文 é \\x1b"


def test_inspect_prints_names_holding_terminal_escape_codes_escaped(tmp_path):
    """An entry name from someone else's dump holding ``\\x1b]0;pwn\\x07`` or ``\\x1b[2J`` is printed escaped, in
    the summary and in the error line naming it; ``--json`` holds it as JSON escapes it."""
    writer = RankWriter(tmp_path / "dump" / "step0" / "rank0", {"task": "statistics", "level": "L1",
                                                               "framework": "pytorch", "dump_data_dir": None})
    tensor = {"type": "torch.Tensor", "dtype": "torch.float32", "shape": [2], "Max": float("inf"), "Min": 1.0,
              "Mean": 2.0, "Norm": float("inf"), "requires_grad": False}
    entry = f"Torch.exp{HOSTILE_ESCAPES}.0.forward"
    writer.entry(entry, {"input_args": [dict(tensor, Max=1.0, Norm=1.0)], "input_kwargs": {}, "output": [tensor]})
    writer.finalize(remove_journal=True)
    code, out, err = printed([MSPROBE, "inspect", "dump"], tmp_path)
    assert code == 0 and TERMINAL_CONTROL.search(out + err) is None, (out, err)
    assert f"Torch.exp{HOSTILE_SHOWN}.0.forward: output.0" in out.decode(), out
    code, out, _ = printed([MSPROBE, "inspect", "--json", "dump"], tmp_path)
    assert code == 0 and json.loads(out)[0]["non_finite"] == [f"{entry}: output.0"]
    dump_json = tmp_path / "dump" / "step0" / "rank0" / "dump.json"
    dump_json.write_text(dump_json.read_text().replace('"torch.float32"', "5", 1))
    code, out, err = printed([MSPROBE, "inspect", "dump"], tmp_path)
    assert code == 2 and TERMINAL_CONTROL.search(out + err) is None, (out, err)
    # (an error line is one line: its line breaks, the \r too, become spaces before the rest is escaped)
    assert err.decode().startswith("msprobe: error: ") and HOSTILE_SHOWN[:-2] + " .0.forward" in err.decode(), err


def test_missing_tool_names_the_package(monkeypatch, capsys):
    import msprobe.cli.plugins as plugins
    from msprobe.cli.main import main

    real = plugins.entry_points
    monkeypatch.setattr(plugins, "entry_points",
                        lambda group: [p for p in real(group) if p.name != "op_generate"])  # as if not installed
    with pytest.raises(SystemExit) as exited:
        main(["op_generate", "-i", "config_op.json", "-o", "out"])
    err = capsys.readouterr().err
    assert exited.value.code == 2
    assert err == ("msprobe: error: 'msprobe op_generate' comes with the package msprobe-op-generate, which is not "
                   "installed: pip install msprobe-op-generate\n")


@pytest.mark.parametrize("args, handler, package", [
    (["config_check", "-d", "a.sh"], "pack", "msprobe-config-check"),
    (["config_check", "-c", "ckpt_a", "ckpt_b"], "compare_checkpoints", "msprobe-ckpt-compare")])
def test_missing_config_check_handler_names_the_package(monkeypatch, capsys, tmp_path, args, handler, package):
    """Said to users who installed from wheels too: the package to install, no path into a checkout."""
    import msprobe.cli.plugins as plugins
    from msprobe.cli.main import main

    (tmp_path / "ckpt_a").mkdir()
    (tmp_path / "ckpt_b").mkdir()
    monkeypatch.chdir(tmp_path)
    real = plugins.entry_points
    monkeypatch.setattr(plugins, "entry_points", lambda group: [p for p in real(group) if p.name != handler])
    with pytest.raises(SystemExit) as exited:
        main(args)
    assert exited.value.code == 2
    assert capsys.readouterr().err == (f"msprobe: error: config_check {args[1]} comes with the package {package}, "
                                       f"which is not installed: pip install {package}\n")


def test_config_check_needs_one_mode(tmp_path):
    assert_one_line_error(msprobe("config_check"), "exactly one of -d")
    assert_one_line_error(msprobe("config_check", "-c", str(tmp_path / "a.zip"), str(tmp_path / "b.zip")),
                          "no such file or directory")


def test_demo_refuses_a_folder_it_did_not_make(tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    assert_one_line_error(msprobe("demo", "-o", str(tmp_path / "mine")), "not made by msprobe demo")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_version_comes_from_the_package_metadata():
    from importlib import metadata

    expected = f"msprobe {metadata.version('msprobe-shared')}\n"
    for flag in ("-V", "--version"):
        shown = msprobe(flag)
        assert shown.returncode == 0 and shown.stdout == expected, shown.stderr


def test_shell_completion_completes_commands_and_options():
    env = dict(os.environ, _MSPROBE_COMPLETE="complete_bash", COMP_WORDS="msprobe overflow_check --inc",
               COMP_CWORD="2")
    done = msprobe(env=env)
    assert done.returncode == 0 and done.stdout.split() == ["--include-expected"], done.stderr
    env.update(COMP_WORDS="msprobe ins", COMP_CWORD="1")
    assert msprobe(env=env).stdout.split() == ["inspect"]
    env.update(_MSPROBE_COMPLETE="source_bash")  # the script --show-completion prints from bash
    script = msprobe(env=env)
    assert script.returncode == 0 and "_MSPROBE_COMPLETE=complete_bash" in script.stdout


def test_help_shows_flags_as_flags():
    """Help shows a boolean flag as a switch, never as ``-d <bool>`` (as if it took a value)."""
    for command in ([], ["inspect"], ["overflow_check"], ["config_check"], ["demo"]):
        shown = msprobe(*command, "--help")
        assert shown.returncode == 0, shown.stderr
        assert "<bool>" not in shown.stdout and "-h, --help" in shown.stdout, shown.stdout
    assert "\n  -q, --quiet " in msprobe("inspect", "--help").stdout
    assert "\n  -d, --dump " in msprobe("config_check", "--help").stdout


def _on_a_terminal(args, cwd):
    """Run with stderr on a pseudo-terminal (as a person sees it); stdout captured. Returns (rc, stderr text)."""
    return on_a_terminal([MSPROBE, *args], cwd)


def test_progress_bar_only_on_a_terminal_and_not_with_quiet(tmp_path):
    for step in range(3):
        writer = RankWriter(tmp_path / "dump" / f"step{step}" / "rank0", {"task": "statistics", "level": "L1",
                                                                           "framework": "pytorch",
                                                                           "dump_data_dir": None})
        writer.entry("Torch.sin.0.forward", {"input_args": [], "input_kwargs": {}, "output": []})
        writer.finalize(remove_journal=True)
    for command, label in ((["inspect", "dump"], "inspect"), (["overflow_check", "-i", "dump"], "overflow_check")):
        code, err = _on_a_terminal(command, tmp_path)
        assert code == 0 and label in err and "\x1b[" in err, err  # a bar drawn, then cleared
        code, err = _on_a_terminal(command + ["--quiet"], tmp_path)
        assert code == 0 and err == "", err
        piped = msprobe(*command, cwd=tmp_path)
        assert piped.returncode == 0 and piped.stderr == "", piped.stderr
