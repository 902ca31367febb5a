"""PyTorch dumps: ours (task tensor) and msprobe's (peer fixtures) give scripts that run on CPU; the bench is one
dtype wider; --standalone scripts run without the suite; --from-overflow reproduces the first overflowing API."""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest


FIXTURES = "test/msprobe_test"
RUN_UT = f"{FIXTURES}/pytorch_ut/api_accuracy_checker/run_ut"


def _ours(result):
    return {row["API Name"]: row for row in result["details"]}


@pytest.mark.parametrize("data_mode", ["random_data", "real_data"])
def test_our_dump_forward_and_backward(torch_dump, make_scripts, run_scripts, data_mode):
    apis = ["Functional.linear.0", "Functional.layer_norm.0", "Functional.embedding.0", "Torch.matmul.0",
            "Tensor.__mul__.0"]
    results = run_scripts(make_scripts(torch_dump, apis, "backward", data_mode))
    for result in results[:4]:  # float32 APIs: pass the documented rule against the float64 bench
        assert result["code"] == 0, result
        assert all(row["Tested Dtype"] == "float32" and row["Bench Dtype"] == "float64" for row in result["details"])
    embedding = _ours(results[2])
    assert list(embedding) == ["Functional.embedding.0.forward.output.0", "Functional.embedding.0.backward.output.0"]
    mul = _ours(results[4])["Tensor.__mul__.0.forward.output.0"]  # float16 under test, float32 bench
    assert (mul["Tested Dtype"], mul["Bench Dtype"], mul["Dtype Status"]) == ("float16", "float32", "pass")


def test_msprobe_statistics_dump_gives_runnable_scripts(peer_fixtures, tmp_path, make_scripts, run_scripts):
    dump = peer_fixtures / RUN_UT / "dump.json"
    results = run_scripts(make_scripts(dump, ["Tensor.__mul__.7", "Torch.chunk.4", "Torch.cat.8"]))
    assert [r["result"][0]["API Name"] for r in results] == ["Tensor.__mul__.7", "Torch.chunk.4", "Torch.cat.8"]
    mul, chunk, cat = results
    assert [row["Shape"] for row in chunk["details"]] == ["[2048, 2, 1, 128]", "[2048, 2, 1, 128]"]
    assert chunk["code"] == cat["code"] == 0
    # float16 against a float32 bench: rounding alone exceeds the documented 1e-4, the dtype-aware verdict passes
    row = mul["details"][0]
    assert (row["Status"], row["Dtype Status"], row["Further From Golden"]) == ("error", "pass", "tested")


def test_msprobe_bare_extract_and_mindspore_fixture(peer_fixtures, tmp_path, run_scripts, capsys, cli):
    config = tmp_path / "config_op.json"
    config.write_text(json.dumps({"extract_api_path": str(peer_fixtures / RUN_UT / "forward.json"),
                                  "api_name": "Torch.chunk.4"}))
    assert cli(["-f", "pytorch", "op_generate", "-i", str(config), "-o", str(tmp_path / "out")]) == 0
    ms_dump = peer_fixtures / FIXTURES / "mindspore_ut/compare/dump_file/mindspore_data/dump.json"
    config.write_text(json.dumps({"dump_json_path": str(ms_dump), "api_name": "Mint.logical_or.0"}))
    assert cli(["-f", "mindspore", "op_generate", "-i", str(config), "-o", str(tmp_path / "out")]) == 0
    logical_or, chunk = run_scripts(sorted((tmp_path / "out").glob("*.py")))
    assert chunk["code"] == 0 and logical_or["code"] == 0
    assert logical_or["details"][0]["Tested Dtype"] == "bool"


def test_msprobe_tensor_fixture_without_its_files(peer_fixtures, tmp_path, capsys, cli):
    dump = peer_fixtures / FIXTURES / "mindspore_ut/api_accuracy_checker/files/api_info_tensor.json"
    config = tmp_path / "config_op.json"
    config.write_text(json.dumps({"dump_json_path": str(dump), "api_name": "MintFunctional.relu.0",
                                  "data_mode": "real_data"}))
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "2_3_input.npy not found" in err and str(dump) in err


def test_standalone_script_runs_without_the_suite(torch_dump, make_scripts, tmp_path, cli):
    script = make_scripts(torch_dump, ["Functional.layer_norm.0"], "backward")[0]
    assert "msprobe" in script.read_text()
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"dump_json_path": str(torch_dump), "api_name": "Functional.layer_norm.0",
                                  "propagation": "backward"}))
    assert cli(["op_generate", "-i", str(config), "-o", str(tmp_path / "alone"), "--standalone"]) == 0
    alone = tmp_path / "alone" / "Functional.layer_norm.0.backward.py"
    assert "import msprobe" not in alone.read_text() and "from msprobe" not in alone.read_text()
    blocker = ("import sys, runpy; sys.modules['msprobe'] = None; sys.argv = sys.argv[1:]; "
               "runpy.run_path(sys.argv[0], run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", blocker, str(alone)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Functional.layer_norm.0.backward.output.0: pass" in done.stdout
    assert len(list((tmp_path / "op_result_output").glob("accuracy_checking_result_*.csv"))) == 1


def test_from_overflow_reproduces_the_first_overflowing_api(tmp_path, torch_apis_module, run_scripts, capsys, cli):
    torch_apis_module.overflow(tmp_path / "dump")
    assert cli(["op_generate", "--from-overflow", str(tmp_path / "dump"), "-o", str(tmp_path / "out")]) == 0
    assert "first overflow: Torch.log.0" in capsys.readouterr().out
    result = run_scripts([tmp_path / "out" / "Torch.log.0.forward.py"])[0]
    row = result["details"][0]  # log(0) = -inf on both sides, at the same place: that is agreement
    assert row["Status"] == "pass" and float(row["MaxAbsErr"]) < 1e-4
    assert row["Inf/NaN Not In Bench"] == "0"  # the -inf is the bench's too: not an overflow of the API's own


def test_demo_part_reproduces_the_overflow_part_finding(tmp_path):
    from msprobe.cli.demo import DemoContext
    from msprobe.op_generate.demo import run
    from msprobe.overflow.demo import run as overflow_part

    said = []
    context = DemoContext(out_dir=tmp_path, framework=None)
    context.say = said.append
    context.results["overflow"] = overflow_part(context)
    script = run(context)
    assert script.endswith("Torch.exp.0.forward.py") and run.order == 35
    # float16 exp overflows where the float32 bench does not: an error, and the tested side is the inexact one
    assert any(line.startswith("Torch.exp.0.forward.output.0: error (float16 under test, float32 bench, max abs "
                               "err inf, further from the float64 golden: tested)") for line in said), said
    assert len(list((tmp_path / "op_generate" / "op_result_output").glob("accuracy_checking_result_*.csv"))) == 1
    (details,) = (tmp_path / "op_generate" / "op_result_output").glob("accuracy_checking_details_*.csv")
    with open(details, newline="") as handle:
        (row,) = csv.DictReader(handle)
    assert int(row["Inf/NaN Not In Bench"]) > 0, row  # its own inf, where the bench is finite
