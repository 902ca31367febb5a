"""Upstream msprobe (PyPI ``mindstudio-probe``) in throwaway virtual environments, for comparisons.

API (stable; other tests rely on it)::

    from tests.support.upstream_msprobe import upstream_python, make_upstream_dump, run_upstream_cli

    python = upstream_python("26.2.0")           # Path of the venv's python; built once, then cached
    root = make_upstream_dump("8.3.3", SCRIPT, tmp_path / "up")   # runs SCRIPT with that python
    proc = run_upstream_cli("26.2.0", ["compare", "-tp", A, "-gp", B, "-o", OUT], cwd=tmp_path)

Versions known to work: ``SUPPORTED`` (``26.2.0`` and ``8.3.3``). Each venv lives in
``${MSPROBE_CACHE:-~/.cache/msprobe}/upstream/mindstudio-probe-<version>-<key>/`` and is made under a file
lock (parallel test processes build it once). It reads this clone's site-packages, so it is keyed by that
path and stamped with it (tests/support/cached_venv.py): a clone never uses an entry whose clone is gone.
It holds only ``mindstudio-probe`` (installed
``--no-deps``) and the few pure-Python packages upstream imports that the suite's venv lacks; torch,
numpy, pandas and the rest come from the suite's own venv through a ``.pth`` line naming its
site-packages (appended after the venv's own, so upstream's regular ``msprobe`` package shadows the
suite's namespace package, and the suite's editable ``.pth`` files are not processed there).

``make_upstream_dump(version, script, out_dir)`` runs ``script`` (a Python file, or source text) with
``MSPROBE_OUT=<out_dir>`` in the environment and ``out_dir`` as working directory; the script is expected
to dump with ``from msprobe.pytorch import PrecisionDebugger`` (upstream's) into ``$MSPROBE_OUT``.
Upstream's ``step<N>/rank|proc<pid>/`` tree is returned as ``out_dir``. Upstream prints CANN banners
and exits 0 after errors: callers check the files it writes, not only its exit status.

``make_tiny_dump(version, out_dir, steps=2)``: upstream's own mix-level statistics dump of the suite's tiny
transformer as rank 0 of a one-process gloo group (so it holds ``Distributed.*`` entries), ``steps`` steps:
``out_dir/step<N>/rank0/{dump,construct,stack}.json``. ``package_dir(version)``: the installed upstream
package, for the data files it ships (``config.json``, ``core/compare/ms_to_pt_api.yaml``...).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, Optional, Sequence, Union

from tests.support.cached_venv import ensure_venv, keyed_dir, prune_stale, suite_site_packages
from tests.support.msadapter_env import cache_dir

SUPPORTED = ("26.2.0", "8.3.3")
_REPO = Path(__file__).resolve().parents[2]
TINY_DUMP_SCRIPT = _REPO / "tests" / "compare" / "scripts" / "dump_tiny.py"
TINY_MODEL = _REPO / "tools" / "dump" / "src" / "msprobe" / "pytorch" / "tiny_model.py"
# imported by upstream's dump and compare paths but not needed by the suite's venv
_EXTRA_PACKAGES = {
    "26.2.0": ["tqdm", "einops", "pytz", "packaging", "wheel", "matplotlib", "tensorboard"],
    "8.3.3": ["tqdm", "einops", "pytz", "rich", "tabulate", "pwinput", "wheel", "matplotlib", "tensorboard"],
}


def venv_dir(version: str) -> Path:
    """This clone's entry: keyed by the suite site-packages its ``.pth`` line names (tests/support/cached_venv)."""
    return keyed_dir(cache_dir() / "upstream", f"mindstudio-probe-{version}", [suite_site_packages()])


def upstream_python(version: str) -> Path:
    """The python of a venv holding ``mindstudio-probe==version``, created on first use."""
    if version not in SUPPORTED:
        raise ValueError(f"upstream msprobe {version!r} is not one of {SUPPORTED}")
    site = suite_site_packages()
    prune_stale(cache_dir() / "upstream")
    root = ensure_venv(venv_dir(version), recipe={"mindstudio-probe": version, "extras": _EXTRA_PACKAGES[version]},
                       depends_on=[site], build=lambda root: _build(version, root, site))
    return root / "bin" / "python"


def _build(version: str, root: Path, suite_site: Path) -> None:
    python = root / "bin" / "python"
    site = Path(subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())
    # the suite's site-packages (torch, numpy, pandas...) after the venv's own
    (site / "zz_suite_site_packages.pth").write_text(f"{suite_site}\n")
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run(pip + ["--no-deps", f"mindstudio-probe=={version}"], check=True)
    missing = [p for p in _EXTRA_PACKAGES[version] if not _importable(python, p)]
    if missing:
        subprocess.run(pip + missing, check=True)
    subprocess.run([str(python), "-c", "import msprobe.msprobe, msprobe.pytorch"], check=True, env=_env(),
                   cwd=str(root))


def _importable(python: Path, package: str) -> bool:
    module = {"pyyaml": "yaml"}.get(package, package)
    return subprocess.run([str(python), "-c", f"import {module}"], capture_output=True).returncode == 0


def _env(extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(extra or {})
    return env


def run_upstream_cli(version: str, args: Sequence[str], cwd: Union[str, Path], timeout: float = 600,
                     env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    """``msprobe ARGS`` of upstream ``version``, output captured."""
    python = upstream_python(version)
    return subprocess.run([str(python), "-m", "msprobe.msprobe", *map(str, args)], cwd=str(cwd), text=True,
                          capture_output=True, timeout=timeout, env=_env(env))


def make_upstream_dump(version: str, script: Union[str, Path], out_dir: Union[str, Path],
                       timeout: float = 600, env: Optional[Dict[str, str]] = None) -> Path:
    """Run ``script`` (a path or source text) with upstream ``version``; returns ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    python = upstream_python(version)
    if isinstance(script, Path) or (isinstance(script, str) and "\n" not in script and Path(script).is_file()):
        command = [str(python), str(Path(script).resolve())]
    else:
        command = [str(python), "-c", str(script)]
    extra = {"MSPROBE_OUT": str(out_dir.resolve())}
    extra.update(env or {})
    proc = subprocess.run(command, cwd=str(out_dir), text=True, capture_output=True, timeout=timeout,
                          env=_env(extra))
    if proc.returncode != 0:
        raise RuntimeError(f"upstream msprobe {version} script failed ({proc.returncode}):\n"
                           f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return out_dir


def make_tiny_dump(version: str, out_dir: Union[str, Path], steps: int = 2) -> Path:
    """Upstream ``version``'s statistics dump of the tiny transformer (see the module docstring)."""
    with socket.socket() as probe:  # a free port for the gloo rendezvous of this one process
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {"DUMP_TASK": "statistics", "DUMP_LEVEL": "mix", "DUMP_STEPS": str(steps), "TINY_MODEL": str(TINY_MODEL),
           "WORLD_SIZE": "1", "RANK": "0", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
           "MASTER_PORT": str(port), "OMP_NUM_THREADS": "1"}
    out_dir = make_upstream_dump(version, TINY_DUMP_SCRIPT, out_dir, env=env)
    missing = [n for s in range(steps) for n in ("dump.json", "construct.json", "stack.json")
               if not (out_dir / f"step{s}" / "rank0" / n).is_file()]
    if missing:
        raise RuntimeError(f"upstream msprobe {version} wrote no {missing[0]} under {out_dir}")
    return out_dir


def package_dir(version: str) -> Path:
    """The directory of upstream ``version``'s installed ``msprobe`` package."""
    python = upstream_python(version)
    found = subprocess.run([str(python), "-c", "import msprobe, os; print(os.path.dirname(msprobe.__file__))"],
                           capture_output=True, text=True, check=True, env=_env(), cwd=str(python.parent))
    return Path(found.stdout.strip())


if __name__ == "__main__":  # build both ahead of a test run: python -m tests.support.upstream_msprobe
    for name in sys.argv[1:] or SUPPORTED:
        print(upstream_python(name))
