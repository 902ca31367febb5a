"""Statistics are computed once per tensor contents, and never served for changed or different contents."""
from __future__ import annotations

import zlib

import torch

from dumphelpers import assert_stats_match, dump_one_step, numpy_stats
from msprobe.pytorch import stats
from msprobe.pytorch.content_cache import ContentCache


def _run(tmp_path, body, summary_mode="statistics"):
    # every overridable API: contiguous() is not in msprobe's default set
    return dump_one_step(tmp_path, body, statistics={"summary_mode": summary_mode}, record_all_apis=True)


def _counting(monkeypatch):
    """Shapes of the tensors whose statistics were computed (``stats.reduce`` calls)."""
    reduced = []
    original = stats.reduce

    def counted(tensor, precision, md5):
        reduced.append(tuple(tensor.shape))
        return original(tensor, precision, md5)
    monkeypatch.setattr(stats, "reduce", counted)
    return reduced


def test_views_share_statistics_and_writes_through_a_view_are_seen(tmp_path, monkeypatch):
    reduced = _counting(monkeypatch)
    x = torch.randn(6, 4)
    kept = {}  # the copy stays alive: its contents must not be mistaken for anything else

    def body():
        t = x.t()  # input x: reduced; output: a transposed view of x, same contents
        kept["copy"] = t.contiguous()  # input: the view; output: a copy (new contents, reduced)
        t.mul_(2)  # input: the view; output: written through the view (x's version changes too)
        torch.neg(x)  # input: x after mul_, the contents mul_ returned; output: new
    data = _run(tmp_path, body)
    transposed = data["Tensor.t.0.forward"]
    assert transposed["input_args"][0]["Max"] == transposed["output"][0]["Max"]
    assert reduced == [(6, 4), (4, 6), (4, 6), (6, 4)]
    assert_stats_match(data["Torch.neg.0.forward"]["input_args"][0], numpy_stats(x.numpy()), "x after mul_")
    assert data["Tensor.mul_.0.forward"]["output"][0]["Max"] == x.max().item()


def test_md5_of_a_transpose_is_its_own(tmp_path):
    x = torch.randn(3, 5)
    data = _run(tmp_path, lambda: x.t().neg(), summary_mode="md5")
    entry = data["Tensor.neg.0.forward"]
    assert entry["input_args"][0]["md5"] == f"{zlib.crc32(x.t().contiguous().numpy().tobytes()):08x}"
    assert data["Tensor.t.0.forward"]["input_args"][0]["md5"] == f"{zlib.crc32(x.numpy().tobytes()):08x}"


def test_cache_holds_no_tensor_and_never_serves_a_dead_one():
    cache = ContentCache(8)
    t = torch.ones(3)
    _, key, owner = cache.lookup(t)
    cache.store(key, owner, "ones")
    assert cache.lookup(t.view(3))[0] == "ones"
    del t, owner
    fresh = torch.zeros(3)  # may reuse the freed tensor's id: must not be served the old value
    assert cache.lookup(fresh)[0] is None


def test_inference_tensors_are_dumped_and_never_cached(tmp_path):
    torch.manual_seed(0)
    kept = {}

    def body():
        with torch.inference_mode():
            x = torch.randn(4, 4)
            kept["x"] = x
            torch.relu(x)
            x.mul_(2)  # no version counter in inference mode: the next statistics must not come from a cache
            torch.relu(x)
    data = _run(tmp_path, body)
    x = kept["x"]
    assert_stats_match(data["Torch.relu.1.forward"]["input_args"][0], numpy_stats(x.numpy()), "x after mul_")
    before, after = (data[f"Torch.relu.{i}.forward"]["input_args"][0]["Max"] for i in (0, 1))
    assert before == after / 2
