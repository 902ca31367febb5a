"""The compiled record helpers against the Python paths they replace: ``torch_record`` (a CPU tensor's
whole record) against ``tensor_meta`` + ``tensor_stats``, ``json_bytes``/``json_line`` against the json
module, byte for byte."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from msprobe.dump import native
from msprobe.pytorch.adapter import TorchAdapter

kernel = native.helpers()
pytestmark = pytest.mark.skipif(kernel is None, reason="no C compiler or Python headers here")


def _python_record(adapter: TorchAdapter, tensor: torch.Tensor, precision: str, md5: bool) -> dict:
    type_name, dtype, shape, requires_grad = adapter.tensor_meta(tensor)
    ready = adapter.ready_stats(adapter.tensor_stats(tensor, precision, md5))
    record = {"type": type_name, "dtype": dtype, "shape": shape, "Max": ready["Max"], "Min": ready["Min"],
              "Mean": ready["Mean"], "Norm": ready["Norm"], "requires_grad": requires_grad}
    if md5:
        record["md5"] = ready["md5"]
    return record


@pytest.mark.parametrize("md5", [False, True])
@pytest.mark.parametrize("precision", ["normal", "high"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_torch_record_equals_the_python_path(dtype, precision, md5):
    torch.manual_seed(0)
    tensors = [torch.randn(3, 5).to(dtype), torch.randn(7, dtype=torch.float64).to(dtype).requires_grad_(),
               torch.randn(4, 6).to(dtype)[1:3], torch.tensor(2.5, dtype=dtype), torch.randn(2, 3, 4).to(dtype)
               .permute(2, 0, 1), torch.randn(5, 1, 3).to(dtype).transpose(0, 2)]
    made = TorchAdapter().record_maker(precision, md5)
    if made is None:  # md5 without the carry-less multiply: the Python path does it all
        assert md5 and not kernel.has_fast_crc32
        return
    for tensor in tensors:
        fast = made(tensor)
        if (precision == "high" and dtype != torch.float64) or (md5 and not tensor.is_contiguous()):
            assert fast is None  # float64 accumulation, CRC-32 in element order: the Python path
            continue
        assert json.dumps(fast) == json.dumps(_python_record(TorchAdapter(), tensor, precision, md5))
        assert list(fast) == list(_python_record(TorchAdapter(), tensor, precision, md5))  # key order


def test_torch_record_declines_what_the_python_path_handles():
    made = TorchAdapter().record_maker("normal", False)
    x = torch.randn(4, 6)
    with torch.inference_mode():
        inference = torch.ones(3)
    declined = {"strided": x[:, ::2], "expanded": torch.randn(3, 1).expand(3, 4), "empty int": torch.ones(0).long(),
                "empty": torch.ones(0), "inference": inference, "negated view": torch._neg_view(x),
                "complex": torch.ones(2, dtype=torch.complex64), "sparse": x.to_sparse()}
    for name, tensor in declined.items():
        assert made(tensor) is None, name
    assert made(x.t()) is not None  # a transpose is a dense block: statistics ...
    assert TorchAdapter().record_maker("normal", True)(x.t()) is None  # ... but CRC-32 follows the element order


@pytest.mark.parametrize("precision", ["normal", "high"])
def test_torch_record_of_integers_and_bools_equals_the_python_path(precision):
    """Any strides, every integer kind, bools (Max/Min = any/all, no Mean/Norm), 0-dim; in md5 mode the
    Python path's (its CRC-32 follows the element order)."""
    torch.manual_seed(0)
    tokens = torch.randint(0, 100, (8, 33))
    tensors = [tokens[:, :-1], tokens.t(), torch.randint(-5, 5, (3, 4), dtype=torch.int32)[:, ::2],
               torch.randint(0, 255, (6,), dtype=torch.uint8), torch.randint(-9, 9, (2, 3), dtype=torch.int8),
               torch.randint(-9, 9, (4,), dtype=torch.int16), torch.tensor(7),
               torch.ones(4, 4, dtype=torch.bool).triu(1), torch.zeros(3, dtype=torch.bool),
               torch.ones(2, 5, dtype=torch.bool)[:, 1:]]
    made = TorchAdapter().record_maker(precision, False)
    for tensor in tensors:
        fast = made(tensor)
        assert fast is not None, (tensor.dtype, tensor.shape)
        slow = _python_record(TorchAdapter(), tensor, precision, False)
        assert json.dumps(fast) == json.dumps(slow) and list(fast) == list(slow)
        assert json.dumps(made(tensor)) == json.dumps(slow)  # known the second time
    tokens.add_(1)  # a new version: new statistics
    assert made(tokens[:, :-1])["Max"] == float(tokens[:, :-1].max())
    with_md5 = TorchAdapter().record_maker(precision, True)
    if with_md5 is not None:
        assert with_md5(tokens) is None


def test_torch_record_of_aliases_at_an_offset():
    """``.data`` of a view is no view (no ``_base``) yet starts inside its storage: keyed by its own id, its
    statistics are its own elements', and another alias of the same storage gets its own."""
    x = torch.arange(24, dtype=torch.float32).reshape(6, 4)
    made = TorchAdapter().record_maker("normal", False)
    tail, rows = x[2:].data, x[3:5].data
    assert tail._base is None and tail.storage_offset() == 8
    for alias in (tail, rows, tail):
        record = made(alias)
        assert json.dumps(record) == json.dumps(_python_record(TorchAdapter(), alias, "normal", False))
    assert made(tail)["Min"] == 8.0 and made(rows)["Min"] == 12.0 and made(rows)["Max"] == 19.0


def test_torch_record_shares_the_statistics_cache_with_the_python_path():
    """Views are kept by contents in the dict the Python path uses (either path serves what the other
    stored); a tensor that is no view is kept by itself only, and a view covering all of it is served
    from that record."""
    adapter = TorchAdapter()
    made = adapter.record_maker("normal", False)
    entries = adapter._stat_cache.entries
    x = torch.randn(5, 5)
    first = made(x)
    assert list(entries) == [id(x)]  # x itself (test_torch_record_knows_tensor_objects), no contents key
    ref, version, dtype, kept, contiguous = entries[id(x)]
    entries[id(x)] = (ref, version, dtype, dict(kept, Max=123.0), contiguous)  # marked: served, not recomputed
    assert made(x.view(25))["Max"] == 123.0  # all of x at offset 0: x's own record
    assert made(x.t())["Max"] == 123.0  # a transpose covers the same block
    assert made(x[1:])["Max"] == x[1:].max().item()  # part of it: its own statistics
    y = torch.randn(5, 5)  # the C path serves what the Python path stored for a view ...
    python = adapter.tensor_stats(y.view(25), "normal", False)
    _, key, owner = adapter._stat_cache.lookup(y.view(25))
    adapter._stat_cache.store(key, owner, dict(python, Max=456.0))
    assert made(y.reshape(5, 5))["Max"] == 456.0  # another view of the same contents: the same key
    z = torch.randn(5, 5)  # ... and the Python path finds what the C path stored for one
    made(z.t())
    (key,) = [k for k in entries if isinstance(k, tuple) and k[0] == id(z)]
    entries[key] = (entries[key][0], dict(entries[key][1], Max=789.0))
    assert adapter.tensor_stats(z.view(25), "normal", False)["Max"] == 789.0
    x.add_(1)  # a write changes the version: new statistics, for x and its views
    assert made(x)["Max"] == pytest.approx(first["Max"] + 1)
    assert made(x.view(25))["Max"] == pytest.approx(first["Max"] + 1)


def test_torch_record_knows_tensor_objects():
    adapter = TorchAdapter()
    made = adapter.record_maker("normal", False)
    entries = adapter._stat_cache.entries
    x = torch.randn(4, 4)
    first = made(x)
    entries[id(x)][3]["Max"] = 123.0  # marked: what comes back for the same object is the kept record
    again = made(x)
    assert again["Max"] == 123.0 and again is not first and again is not entries[id(x)][3]
    again["data_name"] = "x.pt"  # a caller adds to its record (tensor files): the kept one is a copy
    assert "data_name" not in made(x)
    x.requires_grad_()
    assert made(x)["requires_grad"] is True and made(x)["Max"] == 123.0  # read again every time
    with torch.no_grad():
        x.mul_(2)  # a write: a new version, statistics computed again
    assert made(x)["Max"] == pytest.approx(2 * first["Max"])
    y = torch.randn(4, 4)
    made(y)
    entries[id(y)][3]["Max"] = 123.0
    y.data = torch.randn(3, 8)  # other contents in another shape, at the same version: not the kept record
    assert y._version == 0 and made(y)["shape"] == [3, 8] and made(y)["Max"] == pytest.approx(float(y.max()))
    del x
    z = torch.randn(4, 4)  # a new object may take a dead one's id: the weak reference tells them apart
    assert made(z)["Max"] == pytest.approx(float(z.max()))


@pytest.mark.parametrize("md5", [False, True])
def test_torch_record_of_an_object_at_a_new_version(md5):
    """An in-place update of a kept tensor: new statistics, whatever else changed under the same object."""
    adapter = TorchAdapter()
    made = adapter.record_maker("normal", md5)
    x = torch.randn(6, 6)
    made(x)
    content_keys = len(adapter._crc_cache if md5 else adapter._stat_cache)
    with torch.no_grad():
        x.add_(1.0)
    assert made(x) == _python_record(TorchAdapter(), x, "normal", md5)
    assert len(adapter._crc_cache if md5 else adapter._stat_cache) == content_keys  # new contents: not cached
    swaps = [torch.randn(6, 6), torch.randn(6, 6).t(), torch.randn(6, 12)[:, ::2], torch._neg_view(torch.randn(6, 6))]
    for i, other in enumerate(swaps):  # same shape and dtype: another block, a transpose, a strided view, a negation
        x.data = other
        with torch.no_grad():
            x.mul_(1.5)
        record = made(x)
        if record is None:  # declined (every other column, a negation; md5: a transpose): Python's path makes it
            assert i >= 2 or (md5 and i == 1)
            continue
        assert record["Max"] == pytest.approx(float(x.max())) and record["Min"] == pytest.approx(float(x.min()))
        assert record["Norm"] == pytest.approx(float(x.norm()), rel=1e-6)
        if md5:
            assert record["md5"] == _python_record(TorchAdapter(), x, "normal", True)["md5"]


def test_torch_record_cache_is_bounded():
    adapter = TorchAdapter()
    made = adapter.record_maker("normal", False)
    kept = [torch.randn(2) for _ in range(adapter._stat_cache.limit + 5)]
    for tensor in kept:
        made(tensor)
    assert len(adapter._stat_cache) <= adapter._stat_cache.limit


def _same_json(value) -> None:
    expected = json.dumps(value, ensure_ascii=False).encode("utf-8")
    assert kernel.json_bytes(value) == expected
    assert kernel.json_line(value) == expected + b"\n"


def test_json_bytes_floats_byte_for_byte():
    rng = np.random.default_rng(7)
    n = 100_000
    exponents = rng.integers(1023 - 60, 1023 + 70, n, dtype=np.uint64)  # around and beyond the fast range
    doubles = ((exponents << np.uint64(52)) | rng.integers(0, 2 ** 52, n, dtype=np.uint64)).view(np.float64)
    powers = np.ldexp(1.0, rng.integers(-60, 60, n))
    samples = {
        "random bits": doubles, "negative": -doubles,
        "float32 values": (rng.standard_normal(n) * 10.0 ** rng.integers(-18, 12, n)).astype(np.float32),
        "short decimals": rng.integers(0, 10 ** 6, n) / 10.0 ** rng.integers(0, 22, n),
        "powers of two": powers, "just below": np.nextafter(powers, 0), "just above": np.nextafter(powers, np.inf),
        "powers of ten": 10.0 ** rng.integers(-18, 18, n), "integers": rng.integers(0, 2 ** 53, n).astype(np.float64),
    }
    for name, values in samples.items():
        listed = [float(v) for v in values]
        assert kernel.json_bytes(listed) == json.dumps(listed).encode(), name
        assert kernel.json_bytes(listed) == json.dumps(listed).encode(), name  # again: from the text cache
    _same_json([1e-5, 9.999999999999999e-06, 1e-15, 9.999999999999999e-16, 1.0000000000000001e-15, 1e-10, 1.5e-07, 1e16, 9999999999999998.0, 5e-324, -0.0, 0.0, 1.7976931348623157e308,
                float("nan"), float("inf"), float("-inf"), 0.1, 1 / 3, 2.5, 9007199254740993.0, 4503599627370497.5])


def test_json_bytes_other_values_byte_for_byte():
    _same_json({"text": "quote \" backslash \\ newline \n tab \t \x01 \x1f é 中 \u2028 \U0001f600",
                "ints": [0, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 63, -2 ** 200, True, False],
                "nested": [[], {}, (1, (2, [None])), {"a": {"b": [1.5, "x"]}}], "": None})


@pytest.mark.parametrize("value", [{1: "int key"}, [object()], {"a": {1, 2}}, b"bytes"])
def test_json_bytes_refuses_what_it_does_not_know(value):
    with pytest.raises(TypeError):
        kernel.json_bytes(value)


class _PendingIntegers(TorchAdapter):
    """Integer tensors declined by the record maker and their statistics left pending (as an accelerator's
    are): their roles and positions show."""

    def record_maker(self, precision, md5, shared=False):
        made = super().record_maker(precision, md5, shared)
        return None if made is None else lambda tensor: made(tensor) if tensor.is_floating_point() else None

    def tensor_stats(self, tensor, precision, md5):
        handle = super().tensor_stats(tensor, precision, md5)
        return ("pending", handle) if not tensor.is_floating_point() else handle


def _encoders():
    from msprobe.dump.entry import Encoder

    adapter = _PendingIntegers()
    walked, python = Encoder(adapter, "normal", False, False), Encoder(adapter, "normal", False, False)
    python.__dict__.pop("args"), python.__dict__.pop("outputs")  # the class's own (Python) walk
    assert walked.args.func is kernel.encode_args
    return walked, python


def test_encode_args_and_outputs_equal_the_python_walk():
    walked, python = _encoders()
    x, index = torch.randn(3, 4), torch.arange(3)
    args = (x, 2, 1.5, "a", None, True, [x.t(), (1, index)], {"k": index, 3: slice(1, 2)}, slice(None, 4),
            torch.float32, ..., torch.Size([2, 3]), [[[[[[[[[[index]]]]]]]]]])
    kwargs = {"dim": 1, "out": index, "nested": [1.0, {"z": (None, index)}]}
    outputs = [(x, [index, x.t()], 3), [index], index, None]
    results = []
    for encoder in (walked, python):
        pending: list = []
        encoded = [encoder.args(args, kwargs, pending), encoder.args((), None, pending)]
        encoded += [encoder.outputs(output, pending) for output in outputs]
        results.append((json.dumps(encoded), [(p.role, p.position) for p in pending]))
    assert results[0] == results[1]
    assert ("nested", (1, "z", 1)) in results[0][1] and ("input", (7, "k")) in results[0][1]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_torch_record_reduces_rows_of_strided_views(dtype):
    """Chunks of a fused projection (q, k, v of one matmul's output): not one block, but rows of one."""
    adapter = TorchAdapter()
    made = adapter.record_maker("normal", False)
    torch.manual_seed(1)
    fused = (torch.randn(4, 8, 3 * 24) * 5 + 1).to(dtype)
    views = [fused[..., 24:48], fused[..., 48:].view(4, 8, 2, 12), fused[:, ::3, 5:17],
             fused[..., 48:].view(4, 8, 2, 12).transpose(1, 2),  # heads of a chunk: rows merged again
             fused[:, :1, 3:40].expand(4, 300, 37),  # broadcast: every row read again
             fused.transpose(0, 1)[..., 1:]]  # more elements than one gathering buffer holds
    for view in views:
        assert not view.is_contiguous()
        record = made(view)
        wide = view.double().numpy().ravel()
        assert (record["Max"], record["Min"]) == (wide.max(), wide.min())
        # the rows gathered and reduced as one block: test_native.py's tolerances for a block
        assert record["Mean"] == pytest.approx(wide.mean(), rel=1e-7, abs=1e-9)
        assert record["Norm"] == pytest.approx(float(np.sqrt(np.dot(wide, wide))), rel=1e-7)
        assert record["shape"] == list(view.shape)
    # keyed by the view itself (content_cache's key for a tensor that is not one block): the Python
    # path finds it, and a write through the fused tensor is a new version, so new statistics
    assert adapter.tensor_stats(views[0], "normal", False)["Max"] == made(views[0])["Max"]
    fused[0, 0, 30] = 1000.0
    assert made(views[0])["Max"] == 1000.0
    fused[1, 1, 25] = float("nan")
    assert all(value != value for key, value in made(views[0]).items() if key in ("Max", "Min", "Mean", "Norm"))


def test_shared_records_serve_every_entry_of_a_tensor_and_private_ones_are_copies():
    adapter = TorchAdapter()
    if adapter.record_maker("normal", False) is None:
        pytest.skip("no C compiler or Python headers here")
    x = torch.randn(4, 5)
    shared = adapter.record_maker("normal", False, shared=True)
    first = shared(x)
    assert shared(x) is first  # the same tensor at the same version: one record, no copy
    x.requires_grad_()
    again = shared(x)
    assert again is not first and again["requires_grad"] is True and first["requires_grad"] is False
    with torch.no_grad():
        x.mul_(2)  # a new version: new statistics in a new record
    moved = shared(x)
    assert moved is not again and moved["Max"] == pytest.approx(2 * again["Max"])
    private = TorchAdapter().record_maker("normal", False)  # tensor files add their names to records
    y = torch.randn(3)
    made = private(y)
    made["data_name"] = "Torch.add.0.forward.output.0.pt"
    assert "data_name" not in private(y) and private(y) is not private(y)
