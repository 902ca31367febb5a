"""A real Dask cluster on 127.0.0.1 for tests: a ``dask scheduler`` and ``dask worker`` processes (the CLIs a
user starts on a cluster), each worker optionally serving only some folders (``MSPROBE_WORKER_ROOTS``)."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, Iterator, Optional, Tuple

from msprobe.cli.dask_ranks import ROOTS_ENV

DASK = Path(sys.executable).with_name("dask")


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_workers(address: str, count: int, deadline: float) -> None:
    from distributed import Client

    with Client(address, timeout="20s") as client:
        client.wait_for_workers(count, timeout=max(1.0, deadline - time.time()))


@contextlib.contextmanager
def dask_cluster(roots: Dict[str, Optional[Path]]) -> Iterator[Tuple[str, Dict[str, "subprocess.Popen[bytes]"]]]:
    """(scheduler address, {name: worker process}): one single-threaded worker per name of ``roots``, serving
    the folder given (None: every folder); all killed at the end."""
    port = _port()
    address = f"tcp://127.0.0.1:{port}"
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop(ROOTS_ENV, None)
    procs = [subprocess.Popen([str(DASK), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                               "--dashboard-address", ":0", "--no-show"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    workers = {}
    for name, folder in roots.items():
        worker_env = dict(env, **{ROOTS_ENV: str(folder)}) if folder is not None else env
        workers[name] = subprocess.Popen([str(DASK), "worker", address, "--nthreads", "1", "--no-nanny",
                                          "--no-dashboard", "--host", "127.0.0.1"], env=worker_env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        procs.append(workers[name])
    try:
        _wait_workers(address, len(workers), time.time() + 90)
        yield address, workers
    finally:
        for proc in reversed(procs):
            proc.kill()
            proc.wait(timeout=30)
