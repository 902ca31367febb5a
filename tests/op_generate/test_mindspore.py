"""MindSpore 2.10 under test against torch on CPU: 22 APIs of a real dump, forward and backward, random and real
data, judged by the CSVs users read; a planted wrong kernel and a nondeterministic one are caught."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.support.ci import unavailable

if importlib.util.find_spec("mindspore") is None:
    unavailable("mindspore is not installed", module=True)

import mindspore  # noqa: E402
from mindspore import mint  # noqa: E402



def _assert_all_pass(results, backward: bool, count: int):
    assert len(results) == count
    for result in results:
        summary = result["result"][0]
        assert summary["Forward Test Success"] == "pass", result
        assert summary["Backward Test Success"] == ("pass" if backward else ""), result
        assert result["code"] == 0
        details = result["details"]
        assert {row["API Name"].split(".output.")[0].rsplit(".", 1)[1] for row in details} == (
            {"forward", "backward"} if backward else {"forward"}), details
        for row in details:
            assert row["Status"] == "pass" and float(row["Cosine"]) > 0.99 and float(row["MaxAbsErr"]) < 1e-4, row
            assert row["Tested Dtype"] == "float32" and row["Bench Dtype"] == "float64", row
            assert row["Dtype Status"] == "pass", row


@pytest.mark.parametrize("data_mode", ["random_data", "real_data"])
def test_every_api_passes_forward_and_backward(ms_dump, ms_apis, make_scripts, run_scripts, data_mode):
    apis = ms_apis.APIS
    forward = run_scripts(make_scripts(ms_dump, apis, "forward", data_mode))
    _assert_all_pass(forward, backward=False, count=len(apis))
    backward = run_scripts(make_scripts(ms_dump, apis, "backward", data_mode))
    _assert_all_pass(backward, backward=True, count=len(apis))
    linear = next(r for r in backward if r["script"] == "MintFunctional.linear.0.backward.py")
    assert [row["Shape"] for row in linear["details"]] == ["[4, 6]", "[4, 5]", "[6, 5]", "[6]"]


def test_real_data_reproduces_the_dumped_output(ms_dump, make_scripts, run_scripts):
    """Real data: the tested side recomputes exactly what the dump recorded for a deterministic API."""
    script = make_scripts(ms_dump, ["Mint.matmul.0"], "forward", "real_data")[0]
    text = script.read_text()
    assert "Mint.matmul.0.forward.input.0.npy" in text and "mindspore.mint.matmul(*args" in text
    result = run_scripts([script])[0]
    assert result["details"][0]["Shape"] == "[4, 4]"
    assert "further from the float64 golden: tested" in result["printed"]


def test_planted_wrong_kernel_is_an_error_pointing_at_the_tested_side(ms_dump, make_scripts, run_scripts,
                                                                        monkeypatch):
    original = mint.matmul
    monkeypatch.setattr(mint, "matmul", lambda *args, **kwargs: original(*args, **kwargs) * 1.01)
    scripts = make_scripts(ms_dump, ["Mint.matmul.0"], "backward", "random_data")
    result = run_scripts(scripts)[0]
    assert result["code"] == 1
    assert result["result"][0]["Forward Test Success"] == "error"
    forward = result["details"][0]
    assert forward["Status"] == "error" and float(forward["MaxAbsErr"]) >= 1e-4
    assert forward["Further From Golden"] == "tested" and forward["Dtype Status"] == "error"
    assert float(forward["Golden MaxAbsErr Tested"]) > 1e3 * float(forward["Golden MaxAbsErr Bench"])


def test_iterations_report_spread_and_nondeterminism(ms_dump, make_scripts, run_scripts, monkeypatch):
    original = mint.exp
    rng = np.random.default_rng(0)

    def noisy(*args, **kwargs):  # a kernel whose result depends on the run, not only on its inputs
        out = original(*args, **kwargs)
        return out + mindspore.Tensor(rng.uniform(0, 1e-6, out.shape).astype(np.float32))
    scripts = make_scripts(ms_dump, ["Mint.exp.0", "Mint.log.0"], iter_times=3)
    monkeypatch.setattr(mint, "exp", noisy)
    noisy_result, steady = run_scripts(scripts)
    assert "nondeterministic: the tested side gave different bits on identical inputs" in \
        noisy_result["result"][0]["Message"]
    assert "over 3 iterations MaxAbsErr" in noisy_result["details"][0]["Message"]
    assert "nondeterministic" not in steady["result"][0]["Message"]
    assert "over 3 iterations" in steady["details"][0]["Message"]


def test_mindspore_spellings_become_torch_ones(ms_dump, make_scripts):
    softmax, transpose = make_scripts(ms_dump, ["Functional.softmax.0", "Functional.transpose.0"])
    text = softmax.read_text()
    assert "mindspore.ops.softmax(*args, **kwargs)" in text and "torch.nn.functional.softmax" in text
    assert "{'axis': 'dim'" in text
    assert "torch.permute(*args" in transpose.read_text()
