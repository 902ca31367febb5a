"""Run Python 3.9 code against the real MSAdapter 0.1.0 + MindSpore 2.0.0 in a chroot.

The rootfs (Debian bullseye, python3.9, mindspore 2.0.0, msadapter 0.1.0, numpy<1.25, pyyaml, typer, pytest) is
built once by ``dockerfiles/msadapter/build_rootfs.sh`` under ``${MSPROBE_CACHE:-~/.cache/msprobe}``.
Each :func:`run_py39` call enters a private mount namespace (``unshare -m``), bind-mounts the repository and the
working directory at their own absolute paths inside the rootfs, mounts /proc and /dev, and runs ``python3.9`` there
through ``chroot``; the mounts vanish with the process. :func:`run_in_rootfs` runs any program the same way, and
with ``overlay`` sees the rootfs through an overlayfs whose changes stay in a folder of the test's.
Needs root (CI and the dev machines run as root).

Typical use in a test::

    from tests.support import msadapter_env as mae
    mae.require_rootfs()  # skips where the rootfs cannot be used; fails instead under CI=true
    mae.ensure_rootfs()
    proc = mae.run_py39(["-c", "import msprobe.dump"], cwd=tmp_path,
                        env={"PYTHONPATH": mae.repo_pythonpath(["shared", "tools/dump"])})
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Union

REPO_ROOT = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO_ROOT / "dockerfiles" / "msadapter" / "build_rootfs.sh"
STAMP_NAME = ".msprobe-complete"
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# The shell that runs on the host inside the new mount namespace: mount, then chroot + cd + exec the program.
_ENTER = r"""
set -eu
R="$1"; CWD="$2"; shift 2
if [ -n "${MSPROBE_CHROOT_OVERLAY:-}" ]; then
    O="$MSPROBE_CHROOT_OVERLAY"
    mkdir -p "$O/upper" "$O/work" "$O/root"
    mount -t overlay overlay -o "lowerdir=$R,upperdir=$O/upper,workdir=$O/work" "$O/root"
    R="$O/root"
fi
mount -t proc proc "$R/proc"
mount --rbind /dev "$R/dev"
for d in $MSPROBE_CHROOT_BINDS; do
    mkdir -p "$R$d"
    mount --rbind "$d" "$R$d"
done
exec chroot "$R" /bin/sh -c 'cd "$1" && shift && exec "$@"' _ "$CWD" "$@"
"""


class MsadapterEnvError(RuntimeError):
    """The MSAdapter rootfs cannot be built or used here."""


def cache_dir() -> Path:
    value = os.environ.get("MSPROBE_CACHE")
    return Path(value) if value else Path.home() / ".cache" / "msprobe"


def rootfs_path() -> Path:
    """Where the bullseye rootfs lives (it may not exist yet)."""
    value = os.environ.get("MSADAPTER_ROOTFS")
    return Path(value) if value else cache_dir() / "rootfs" / "bullseye-msadapter"


def is_built() -> bool:
    return (rootfs_path() / STAMP_NAME).is_file()


def unavailable_reason() -> Optional[str]:
    """Why run_py39 cannot work on this machine, or None when it can (the rootfs may still need building)."""
    if os.name != "posix" or not hasattr(os, "geteuid"):
        return "the MSAdapter chroot needs Linux"
    if os.geteuid() != 0:
        return "the MSAdapter chroot needs root (chroot, unshare -m and mount)"
    for tool in ("unshare", "chroot", "mount"):
        if shutil.which(tool) is None:
            return f"{tool} not found (apt-get install -y util-linux coreutils mount)"
    if not is_built() and shutil.which("debootstrap") is None:
        return "the MSAdapter rootfs is not built and debootstrap is missing (apt-get install -y debootstrap)"
    return None


def available() -> bool:
    return unavailable_reason() is None


def require_rootfs() -> None:
    """For a test: skip with the reason where the rootfs cannot be used; under CI=true, fail instead."""
    from tests.support.ci import unavailable

    reason = unavailable_reason()
    if reason:
        unavailable(f"MSAdapter rootfs: {reason}")


def ensure_rootfs(timeout: float = 1800) -> Path:
    """Return the rootfs, building it with build_rootfs.sh first when its stamp is missing."""
    path = rootfs_path()
    reason = unavailable_reason()
    if reason is not None:
        raise MsadapterEnvError(f"MSAdapter rootfs unusable: {reason}")
    if is_built():
        return path
    if not BUILD_SCRIPT.is_file():
        raise MsadapterEnvError(f"MSAdapter rootfs missing at {path} and no build script at {BUILD_SCRIPT}")
    env = dict(os.environ, MSPROBE_CACHE=str(cache_dir()), MSADAPTER_ROOTFS=str(path))
    try:
        proc = subprocess.run(["bash", str(BUILD_SCRIPT)], env=env, capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise MsadapterEnvError(f"building the MSAdapter rootfs timed out after {timeout:.0f}s") from exc
    if proc.returncode != 0 or not is_built():
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise MsadapterEnvError(f"building the MSAdapter rootfs failed: {tail[0]}")
    return path


def repo_pythonpath(package_dirs: Iterable[Union[str, Path]] = ("shared",)) -> str:
    """PYTHONPATH value with the ``src`` dirs of repo packages (e.g. ``shared``, ``tools/dump``).

    ``msprobe`` is a namespace package split across those dirs, so plain imports work without installing.
    """
    parts: List[str] = []
    for rel in package_dirs:
        src = (REPO_ROOT / rel / "src").resolve()
        if not src.is_dir():
            raise MsadapterEnvError(f"no src dir in repo package {rel}")
        parts.append(str(src))
    return os.pathsep.join(parts)


def _bind_dirs(cwd: Path, extra: Sequence[Path]) -> List[str]:
    """Absolute host dirs to bind at the same path inside the rootfs (no dir inside another)."""
    wanted = [REPO_ROOT.resolve(), cwd.resolve()] + [Path(p).resolve() for p in extra]
    out: List[Path] = []
    for d in sorted(set(wanted), key=lambda p: len(p.parts)):
        if d == Path("/"):
            raise MsadapterEnvError("cannot bind the host root into the rootfs")
        if any(d == o or o in d.parents for o in out):
            continue
        out.append(d)
    for d in out:
        if any(c.isspace() for c in str(d)):
            raise MsadapterEnvError(f"paths with spaces are not supported for the chroot: {d}")
    return [str(d) for d in out]


def run_py39(args: List[str], cwd: Path, env: Optional[Dict[str, str]] = None, timeout: float = 600,
             binds: Sequence[Path] = (), overlay: Optional[Path] = None) -> "subprocess.CompletedProcess[str]":
    """Run ``python3.9 *args`` in the rootfs with cwd (must exist; under the repo, /tmp, or anywhere) as working dir.

    The repo, ``cwd`` and any ``binds`` are visible (read-write) at their host paths. ``env`` is added to a minimal
    environment (PATH, HOME, LANG); it is not merged with the caller's environment. Output is captured as text.
    With ``overlay`` (a folder outside the bound ones), the rootfs is seen through an overlay whose changes go to
    that folder and persist from call to call: a test may install into the system Python as a user would, while
    the shared cached rootfs stays as built.
    """
    return run_in_rootfs(["python3.9", *args], cwd, env=env, timeout=timeout, binds=binds, overlay=overlay)


def run_in_rootfs(argv: Sequence[Union[str, Path]], cwd: Path, env: Optional[Dict[str, str]] = None,
                  timeout: float = 600, binds: Sequence[Path] = (),
                  overlay: Optional[Path] = None) -> "subprocess.CompletedProcess[str]":
    """Run the program ``argv`` (a path inside the rootfs, or a name on its PATH, e.g. ``pip``) as
    :func:`run_py39` runs python3.9."""
    rootfs = ensure_rootfs()
    cwd = Path(cwd).resolve()
    if not cwd.is_dir():
        raise MsadapterEnvError(f"working dir does not exist: {cwd}")
    child_env = {"PATH": DEFAULT_PATH, "HOME": "/root", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1",
                 "GLOG_v": "3"}  # GLOG_v=3: MindSpore logs errors only
    child_env.update(env or {})
    bound = _bind_dirs(cwd, binds)
    child_env["MSPROBE_CHROOT_BINDS"] = " ".join(bound)
    if overlay is not None:
        overlay = Path(overlay).resolve()
        # bound into the root it makes, the overlay would hold its own mount point
        if any(overlay == Path(d) or Path(d) in overlay.parents for d in bound):
            raise MsadapterEnvError(f"the overlay folder {overlay} lies inside a folder bound into the rootfs")
        child_env["MSPROBE_CHROOT_OVERLAY"] = str(overlay)
    cmd = ["unshare", "-m", "--propagation", "private", "--", "/bin/sh", "-c", _ENTER, "_",
           str(rootfs), str(cwd)] + [str(a) for a in argv]
    return subprocess.run(cmd, env=child_env, capture_output=True, text=True, timeout=timeout)


def py39_wheelhouse(name: str, requirements: Sequence[str], timeout: float = 900) -> Path:
    """Wheels of ``requirements`` for CPython 3.9 on x86_64 Linux, downloaded on the host (pip's resolver) into
    ``<cache>/wheelhouse/py39-<name>`` for offline installs inside the rootfs; fetched again only when the
    requirements change. pip evaluates environment markers with the host's interpreter: name py<3.11
    backports (tomli...) yourself."""
    dest = cache_dir() / "wheelhouse" / f"py39-{name}"
    stamp = dest / ".requirements"
    wanted = "\n".join(requirements) + "\n"
    if stamp.is_file() and stamp.read_text() == wanted:
        return dest
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.whl"):
        old.unlink()
    proc = subprocess.run([_host_python(), "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                           "--dest", str(dest), "--only-binary=:all:", "--python-version", "3.9",
                           "--implementation", "cp", "--abi", "cp39", "--abi", "abi3", "--abi", "none",
                           "--platform", "any", "--platform", "manylinux2014_x86_64", *requirements],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise MsadapterEnvError(f"pip download of {' '.join(requirements)} for python 3.9 failed: {_last_line(proc)}")
    stamp.write_text(wanted)
    return dest


def _host_python() -> str:
    """A host python able to build the repo wheels; one with hatchling avoids an isolated build env each time."""
    candidates = [REPO_ROOT / ".venv" / "bin" / "python", cache_dir() / "buildenv" / "bin" / "python"]
    for py in candidates:
        if py.is_file() and subprocess.run([str(py), "-c", "import hatchling"], capture_output=True).returncode == 0:
            return str(py)
    return str(candidates[0]) if candidates[0].is_file() else shutil.which("python3") or "python3"


def install_repo_packages(paths: Iterable[Union[str, Path]], timeout: float = 600) -> None:
    """pip-install repo packages (dirs relative to the repo root, e.g. ``shared``, ``tools/dump``) into the rootfs.

    Wheels are built on the host (``pip wheel --no-deps``) and installed inside with ``--no-deps --force-reinstall``,
    so local ``{root:parent:uri}`` references are not resolved; the third-party deps the rootfs has (numpy, pyyaml,
    typer) cover the packages of this repo. This changes the shared cached rootfs: prefer :func:`repo_pythonpath`
    when plain imports are enough.
    """
    rootfs = ensure_rootfs()
    dirs = [(REPO_ROOT / p).resolve() for p in paths]
    for d in dirs:
        if not (d / "pyproject.toml").is_file():
            raise MsadapterEnvError(f"not a repo package (no pyproject.toml): {d}")
    python = _host_python()
    isolation = ["--no-build-isolation"] if subprocess.run(
        [python, "-c", "import hatchling"], capture_output=True).returncode == 0 else []
    with tempfile.TemporaryDirectory(prefix="msprobe-wheels-", dir=str(rootfs / "tmp")) as tmp:
        for d in dirs:
            # pure-Python wheels: the rootfs stands for a user's Python 3.9 without a compiler (the image has the kernels)
            proc = subprocess.run([python, "-m", "pip", "wheel", "--quiet", "--no-deps", *isolation, "-w", tmp,
                                   str(d)], capture_output=True, text=True, timeout=timeout,
                                  env=dict(os.environ, MSPROBE_PURE_WHEEL="1"))
            if proc.returncode != 0:
                raise MsadapterEnvError(f"building the wheel of {d} failed: {_last_line(proc)}")
        inside = "/" + str(Path(tmp).relative_to(rootfs))
        wheels = sorted(inside + "/" + w.name for w in Path(tmp).glob("*.whl"))
        proc = run_py39(["-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--force-reinstall",
                         "--disable-pip-version-check", *wheels], cwd=REPO_ROOT, timeout=timeout)
        if proc.returncode != 0:
            raise MsadapterEnvError(f"pip install in the rootfs failed: {_last_line(proc)}")


def _last_line(proc: "subprocess.CompletedProcess[str]") -> str:
    lines = (proc.stderr or proc.stdout or "").strip().splitlines()
    return lines[-1] if lines else f"exit {proc.returncode}"
