"""The MSAdapter chroot works, and the facts tools/dump/MSADAPTER_NOTES.md relies on still hold."""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.support import msadapter_env as mae

pytestmark = pytest.mark.msadapter


@pytest.fixture(scope="module")
def rootfs() -> Path:
    mae.require_rootfs()
    return mae.ensure_rootfs()


def _run(code: str, cwd: Path, **kw):
    script = cwd / "probe.py"
    script.write_text(textwrap.dedent(code), encoding="utf-8")
    proc = mae.run_py39(["probe.py"], cwd=cwd, **kw)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def test_tmp_cwd_is_writable_and_repo_importable(rootfs, tmp_path):
    out = _run("""
        import os, sys, msprobe.schema
        open("written.txt", "w").write("ok")
        print(sys.version_info[:2], os.getcwd(), msprobe.schema.__name__)
    """, tmp_path, env={"PYTHONPATH": mae.repo_pythonpath(["shared"])})
    assert "(3, 9)" in out and str(tmp_path) in out and "msprobe.schema" in out
    assert (tmp_path / "written.txt").read_text() == "ok"


def test_seed_example_trains_with_value_and_grad_and_hooks_fire(rootfs, tmp_path):
    out = _run("""
        import mindspore as ms
        import msadapter.pytorch as torch
        import msadapter.pytorch.nn as nn
        import msadapter.pytorch.nn.functional as F

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.linear1 = nn.Linear(in_features=8, out_features=4)
                self.linear2 = nn.Linear(in_features=4, out_features=2)
            def forward(self, x):
                return F.relu(self.linear2(self.linear1(x)))

        net = Net()
        events = []
        for name, cell in net.named_modules():
            if name:
                cell.register_forward_hook(lambda cid, i, o, n=name: events.append(("fwd", n, tuple(o.shape))))
                cell.register_backward_hook(
                    lambda cid, gi, go, n=name: events.append(("bwd", n, tuple(gi[0].shape), tuple(go[0].shape))))
        out, grad = ms.value_and_grad(lambda x: net(x), grad_position=0)(torch.randn(10, 8))
        print("grad", tuple(grad.shape), str(out.dtype), isinstance(net, ms.nn.Cell))
        print("events", events)
        opt = ms.nn.SGD(net.trainable_params(), learning_rate=0.1)
        x, target = torch.randn(10, 8), torch.zeros(10, 2)
        step = ms.value_and_grad(lambda x: ((net(x) - target) ** 2).mean(), None, opt.parameters)
        losses = []
        for _ in range(5):
            loss, grads = step(x)
            opt(grads)
            losses.append(float(loss.asnumpy()))
        print("decreasing", losses[-1] < losses[0])
    """, tmp_path)
    assert "grad (10, 8) Float32 True" in out
    assert ("events [('fwd', 'linear1', (10, 4)), ('fwd', 'linear2', (10, 2)), "
            "('bwd', 'linear2', (10, 2), (10, 4)), ('bwd', 'linear1', (10, 4), (10, 8))") in out
    assert "decreasing True" in out


def test_install_repo_packages_gives_the_msprobe_command(rootfs, tmp_path):
    try:
        mae.install_repo_packages(["shared"])
        proc = mae.run_py39(["-c", "import shutil, subprocess; print(shutil.which('msprobe'));"
                             "subprocess.run(['msprobe', '--help'], check=True)"], cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert "/usr/local/bin/msprobe" in proc.stdout and "Usage" in proc.stdout
    finally:  # keep the shared cached rootfs free of this repo's packages
        mae.run_py39(["-m", "pip", "uninstall", "-y", "-q", "msprobe-shared"], cwd=tmp_path)
