"""The statistics kernels (built with the package) against float64 numpy, and the numpy path used where
they are missing."""
from __future__ import annotations

import os
import subprocess
import sys
import zlib

import numpy as np
import pytest
import torch

from msprobe.dump import kernels
from msprobe.pytorch import stats
from tests.support.ci import unavailable

kernel = kernels.loaded()


def test_kernels_are_built():
    """CI installs the packages as users do: a build without the kernels is an error here."""
    assert kernel is not None and kernel.__name__ == "msprobe.dump._kernels"


def test_crc32_is_zlib_ngs_with_the_pytorch_extra_and_zlibs_checksum():
    """The dev environment installs the ``pytorch`` extra (zlib-ng): md5 records take its CRC-32, which must be
    zlib's, for every length and alignment the folding loops split differently."""
    assert kernels.crc32.__module__.startswith("zlib_ng")
    rng = np.random.default_rng(0)
    data = rng.integers(0, 256, 5000, dtype=np.uint8).tobytes()
    for start in (0, 1, 7, 64):
        for length in (0, 1, 3, 15, 16, 17, 63, 64, 65, 255, 256, 1023, 4097, len(data) - start):
            chunk = memoryview(data)[start:start + length]
            assert kernels.crc32(chunk) == zlib.crc32(chunk)
            assert kernels.crc32(chunk, 0x1234) == zlib.crc32(chunk, 0x1234)
    t = torch.randn(33, 65)[:, 1:]  # a view: md5 checksums the elements in order
    assert stats.reduce(t, "normal", True).crc == f"{zlib.crc32(t.contiguous().numpy().tobytes()):08x}"


def _reference(t: torch.Tensor) -> dict:
    wide = t.detach().double().numpy().ravel()
    return {"Max": wide.max(), "Min": wide.min(), "Mean": wide.mean(), "Norm": float(np.sqrt(np.dot(wide, wide)))}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("numel", [1, 15, 16, 17, 257, 4096 + 3, 70_000])
def test_kernel_matches_float64_numpy(dtype, numel):
    torch.manual_seed(numel)
    t = (torch.randn(numel) * 3 + 0.5).to(dtype)
    got = stats.reduce(t, "normal", False).ready
    want = _reference(t)
    assert got["Max"] == want["Max"] and got["Min"] == want["Min"]  # exact: no rounding on the way
    assert got["Mean"] == pytest.approx(want["Mean"], rel=1e-7, abs=1e-9)
    assert got["Norm"] == pytest.approx(want["Norm"], rel=1e-7)


@pytest.mark.parametrize("kind, dtype", [(kernels.F16, np.float16), (kernels.BF16, None)])
def test_every_half_precision_bit_pattern_converts_exactly(kind, dtype):
    bits = np.arange(1 << 16, dtype=np.uint16)
    if dtype is None:
        values = torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16)
    else:
        values = torch.from_numpy(bits.view(dtype).copy())
    expected = values.double().numpy()
    got = np.array([kernel.stats(values[i:i + 1].data_ptr(), 1, kind)[0] for i in range(1 << 16)])
    same = (got == expected) | (np.isnan(got) & np.isnan(expected))
    assert same.all(), np.flatnonzero(~same)[:5]


def test_every_half_bit_pattern_converts_exactly_in_the_vector_loop():
    """32 copies of each pattern: one step of the two-row loop (the single-element test above takes the
    scalar tail), where the float16 conversion is vectorised."""
    repeated = np.repeat(np.arange(1 << 16, dtype=np.uint16), 32)
    values = torch.from_numpy(repeated.view(np.float16).copy())
    expected = values[::32].double().numpy()
    base, width = values.data_ptr(), 32 * values.element_size()
    got = np.array([kernel.stats(base + i * width, 32, kernels.F16)[:2] for i in range(1 << 16)])
    for column in (0, 1):
        same = (got[:, column] == expected) | (np.isnan(got[:, column]) & np.isnan(expected))
        assert same.all(), np.flatnonzero(~same)[:5]


def test_nan_and_infinity_follow_numpy():
    with_nan = torch.tensor([1.0, float("nan"), -3.0] * 11)
    assert all(v != v for v in stats.reduce(with_nan, "normal", False).ready.values())
    both = stats.reduce(torch.tensor([float("-inf"), 2.0, float("inf")] * 7), "normal", False).ready
    assert both["Max"] == float("inf") and both["Min"] == float("-inf") and both["Norm"] == float("inf")
    assert both["Mean"] != both["Mean"]  # inf - inf
    huge = torch.tensor([3e38, -2e38, 1e20] * 5)  # finite, but their float32 squares overflow
    assert stats.reduce(huge, "normal", False).ready["Norm"] == pytest.approx(_reference(huge)["Norm"], rel=1e-12)


def test_dense_views_use_the_kernel_and_strided_ones_fall_back(monkeypatch):
    base = torch.randn(64, 48)
    calls = []
    real = kernel.stats

    class Spy:
        @staticmethod
        def stats(address, numel, kind):
            calls.append(numel)
            return real(address, numel, kind)

    monkeypatch.setattr(kernels, "loaded", lambda: Spy)
    transposed = stats.reduce(base.t(), "normal", False).ready
    assert calls == [64 * 48] and transposed["Norm"] == pytest.approx(_reference(base)["Norm"], rel=1e-7)
    stats.reduce(base, "high", False)
    assert calls == [64 * 48]  # precision high: float64 all the way, not the kernel's float32 partial sums
    negated = torch._neg_view(base)  # what autograd makes: the memory holds the values before negation
    assert stats.reduce(negated, "normal", False).ready["Max"] == -float(base.min())
    every_other = base[:, ::2]
    strided = stats.reduce(every_other, "normal", False).ready
    assert calls == [64 * 48, 64 * 48]  # not one block: numpy's path
    assert strided["Max"] == _reference(every_other)["Max"]


@pytest.mark.parametrize("make", [
    lambda: torch.randint(0, 100, (8, 33))[:, 1:],  # a token batch sliced from a longer one
    lambda: torch.randint(-2**40, 2**40, (3, 5, 7)).transpose(0, 2),
    lambda: torch.randint(-128, 127, (257,), dtype=torch.int8)[::3],
    lambda: torch.randint(0, 255, (4, 4), dtype=torch.uint8),
    lambda: torch.randint(-999, 999, (6, 6), dtype=torch.int16).t(),
    lambda: torch.arange(12, dtype=torch.int32).expand(3, 12),
    lambda: torch.tensor(-7),
], ids=["sliced int64", "permuted int64", "every third int8", "uint8", "transposed int16", "expanded int32",
        "0-d"])
def test_integers_in_one_pass_over_any_strides(make, monkeypatch):
    t = make()
    got = stats.reduce(t, "normal", False).ready
    monkeypatch.setattr(kernels, "loaded", lambda: None)  # the numpy path, as without the kernels
    numpy_path, want = stats.reduce(t, "normal", False).ready, _reference(t)
    # as msprobe writes integers: Max and Min exact, as integers; no Mean or Norm (a 0-d one: its value)
    assert got == numpy_path
    assert type(got["Max"]) is int and got["Max"] == want["Max"] and got["Min"] == want["Min"]
    assert (got["Mean"], got["Norm"]) == ((want["Max"],) * 2 if t.dim() == 0 else (None, None))


def test_bools_in_one_pass_over_any_strides():
    mask = torch.ones(32, 32, dtype=torch.bool).triu(1)
    cases = [(mask, (True, False)), (mask.t()[::2], (True, False)), (torch.ones(5, 3, dtype=torch.bool).t(), (True, True)),
             (torch.zeros(7, dtype=torch.bool), (False, False)), (torch.tensor(True), (True, True))]
    for tensor, (any_, all_) in cases:
        assert stats.reduce(tensor, "normal", False).ready == {"Max": any_, "Min": all_, "Mean": None, "Norm": None}


def test_without_the_kernels_numpy_gives_the_same_numbers_and_says_so_once(tmp_path):
    """A package built without a C compiler: the dump's numbers are numpy's, equal to ~1e-6, and one
    warning line says what is slower."""
    script = (
        "import json, sys, torch\n"
        "sys.modules['msprobe.dump._kernels'] = None\n"  # what an install without the extension has
        "from msprobe.pytorch import stats\n"
        "torch.manual_seed(0)\n"
        "t = torch.randn(5000)\n"
        "first, again = stats.reduce(t, 'normal', False).ready, stats.reduce(t * 2, 'normal', False).ready\n"
        "print(json.dumps(first))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    got = __import__("json").loads(done.stdout)
    warnings = [line for line in done.stderr.splitlines() if line.startswith("msprobe: warning:")]
    assert len(warnings) == 1 and "_kernels is not built" in warnings[0] and "slower" in warnings[0]
    torch.manual_seed(0)
    want = _reference(torch.randn(5000))
    assert got["Max"] == want["Max"] and got["Min"] == want["Min"]
    assert got["Norm"] == pytest.approx(want["Norm"], rel=1e-6)
    assert got["Mean"] == pytest.approx(want["Mean"], rel=1e-5, abs=1e-8)


def test_avx2_and_plain_loops_give_the_same_bits():
    """The 256-bit loop does each lane's additions in the plain loop's order: same numbers everywhere."""
    if kernel is None or not kernel.has_avx2:
        unavailable("no AVX2 on this CPU, or the kernels are not built: one loop only")
    script = (
        "import json, torch\n"
        "from msprobe.dump import kernels\n"
        "k = kernels.loaded()\n"
        "torch.manual_seed(3)\n"
        "out = [k.has_avx2]\n"
        "for dtype, kind in ((torch.float32, 0), (torch.bfloat16, 1), (torch.float16, 2), (torch.float64, 3)):\n"
        "    for n in (1, 17, 4099, 70001):\n"
        "        t = (torch.randn(n) * 7 + 1).to(dtype)\n"
        "        out.append([v.hex() for v in k.stats(t.data_ptr(), n, kind)])\n"
        "print(json.dumps(out))\n"
    )
    runs = [__import__("json").loads(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                                                      text=True, check=True).stdout)
            for env in (dict(os.environ), dict(os.environ, MSPROBE_NO_AVX2="1"))]
    assert runs[0][0] == 1 and runs[1][0] == 0
    assert runs[0][1:] == runs[1][1:]


def test_crc32_of_lazy_views_and_layouts_is_zlibs_of_the_values():
    import zlib

    for tensor in (torch.randn(33, 17), torch.randn(40, 24).t(), torch.randn(64).to(torch.bfloat16)):
        want = f"{zlib.crc32(tensor.contiguous().view(torch.uint8).numpy().tobytes()):08x}"
        assert stats._crc_host(tensor) == want
    conjugated = torch.randn(8, dtype=torch.complex64).conj()
    assert stats._crc_host(conjugated) == f"{zlib.crc32(conjugated.resolve_conj().numpy().tobytes()):08x}"
    base = torch.randn(6)
    negated = torch._neg_view(base)
    assert stats._crc_host(negated) == f"{zlib.crc32((-base).numpy().tobytes()):08x}"


def test_reduce_kernel_bench_prints_every_dtype():
    """bench/reduce_kernel.py runs and reports the four float kinds (a tiny run: the figures are not checked)."""
    from pathlib import Path

    script = Path(__file__).resolve().parents[2] / "bench" / "reduce_kernel.py"
    done = subprocess.run([sys.executable, str(script), "--numel", "4096", "--rounds", "1"], capture_output=True,
                          text=True, timeout=300)
    if kernel is None:
        assert done.returncode == 1 and "not built" in done.stderr
        return
    assert done.returncode == 0, done.stderr
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()[2:]}
    assert sorted(rows) == ["bfloat16", "float16", "float32", "float64"]
    assert all(float(row[1]) > 0 and row[3].endswith("x") for row in rows.values())
