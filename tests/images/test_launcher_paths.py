"""What `msprobe run` mounts (tools/launcher guard.py), who the container runs as (owner.py), the hint for a
missing base, and the launcher README's commands: all decided before the docker daemon is asked, so no daemon
is needed here (DOCKER_HOST names none, or a stand-in answers, and a refusal must come before "no docker
daemon answers")."""
from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Dict, List, Tuple

import pytest

from msprobe.launcher import names
from msprobe.launcher.run import plan, prepare, run
from msprobe.schema import MsprobeError
from tests.support.cli import MSPROBE, msprobe
from tests.support.readme import code_blocks

REPO = Path(__file__).resolve().parents[2]
README = REPO / "tools" / "launcher" / "README.md"
NO_DAEMON = "msprobe: error: no docker daemon answers"
ADVICE = "give a folder of your own, e.g. -O ./msprobe_out"


def _no_daemon(home: Path) -> Dict[str, str]:
    """The environment of a caller whose home folder is ``home``, with no docker daemon to ask."""
    return dict(os.environ, DOCKER_HOST="unix:///no/such.sock", HOME=str(home))


@pytest.mark.parametrize("given, why", [
    ("/", "/ is the root directory"), ("/etc", "/etc is a system folder"),
    ("/usr/local/out", "/usr/local/out is a system folder"), ("/var/lib/out", "/var/lib/out is a system folder"),
    ("/proc/1", "/proc/1 is a system folder"), ("/dev/shm/out", "/dev/shm/out is a system folder"),
    ("/tmp", "/tmp is a folder all users share"), ("/var/tmp", "/var/tmp is a folder all users share"),
    ("/home", "/home is a folder all users share"),
])
def test_a_system_or_shared_folder_is_refused_as_the_output(tmp_path, given, why):
    elsewhere = Path("/nonexistent/home")  # (a home under /tmp would make /tmp "a folder holding your home folder")
    refused = msprobe("run", "overflow", "-O", given, "--", "overflow_check", "-i", tmp_path, cwd=tmp_path,
                      env=_no_daemon(elsewhere))
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout + refused.stderr
    assert refused.stderr == (f"msprobe: error: msprobe run: refusing {given} as the writable output folder (-O): "
                              f"{why}; {ADVICE}\n")


def test_your_home_folder_and_the_folders_above_it_are_refused_as_the_output(tmp_path):
    home = tmp_path / "users" / "me"
    home.mkdir(parents=True)
    for given, why in (("~", "your home folder itself"), (str(home.parent), "a folder holding your home folder")):
        refused = msprobe("run", "shared", "-O", given, "--", "--help", cwd=tmp_path, env=_no_daemon(home))
        shown = home if given == "~" else home.parent
        assert refused.returncode == 2, refused.stderr
        assert refused.stderr == (f"msprobe: error: msprobe run: refusing {given} as the writable output folder "
                                  f"(-O): {shown} is {why}; {ADVICE}\n")
    # a folder of your own under them, and under /var/tmp, goes on to the daemon
    for given in (str(home / "out"), f"/var/tmp/msprobe-test-{os.getpid()}/out"):
        asked = msprobe("run", "shared", "-O", given, "--", "--help", cwd=tmp_path, env=_no_daemon(home))
        assert asked.returncode == 2 and asked.stderr.startswith(NO_DAEMON), asked.stderr
        assert not Path(given).exists()  # nothing made before the daemon answered


def test_a_link_to_a_system_folder_is_refused_by_where_it_leads(tmp_path):
    (tmp_path / "innocent").symlink_to("/etc")
    refused = msprobe("run", "shared", "-O", "innocent", "--", "--help", cwd=tmp_path, env=_no_daemon(tmp_path))
    assert refused.returncode == 2 and "refusing innocent as the writable output folder (-O): /etc is a system" \
        in refused.stderr, refused.stderr


def test_sockets_and_the_kernels_folders_are_never_mounted(tmp_path):
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(tmp_path / "daemon.sock"))
    (tmp_path / "via-link").symlink_to(tmp_path / "daemon.sock")
    try:
        for given, why in ((str(tmp_path / "daemon.sock"), f"{tmp_path / 'daemon.sock'} is a socket"),
                           (str(tmp_path / "via-link"), f"{tmp_path / 'via-link'} is a socket"),
                           ("/var/run/docker.sock", "/var/run/docker.sock is the kernel's or a daemon's"),
                           ("/proc/self/root", "/proc/self/root is the kernel's or a daemon's"),
                           ("/sys", "/sys is the kernel's or a daemon's"),
                           ("/tmp", "/tmp holds other programs' sockets"), ("/", "it is the root directory")):
            with pytest.raises(MsprobeError) as refused:
                plan(["inspect", given], tmp_path / "out")
            assert str(refused.value).startswith(f"msprobe run: refusing to mount {given}: {why}"), str(refused.value)
    finally:
        listener.close()
    (tmp_path / "dump").mkdir()
    args, volumes = plan(["inspect", "--json", str(tmp_path / "dump")], tmp_path / "out")
    assert args == ["inspect", "--json", str(tmp_path / "dump")]
    assert volumes == {str(tmp_path / "out"): {"bind": str(tmp_path / "out"), "mode": "rw"},
                       str(tmp_path / "dump"): {"bind": str(tmp_path / "dump"), "mode": "ro"}}


def test_an_argument_naming_the_output_folder_not_made_yet_is_planned_as_once_it_is_made(tmp_path, monkeypatch):
    """Planned before the output folder is made (before the daemon is asked), as it would be after the mkdir:
    the output folder and the folder above it are paths, not bare words; nothing is made."""
    monkeypatch.chdir(tmp_path)
    args = ["compare", "-o", "new", "new/out/result", "--in=new/out"]
    launch = prepare(args, Path("new/out"))
    new = tmp_path / "new"
    assert launch.made == (new / "out", new) and not new.exists()
    assert launch.command == ["compare", "-o", str(new), str(new / "out" / "result"), f"--in={new / 'out'}"]
    (new / "out").mkdir(parents=True)
    assert plan(args, new / "out") == (launch.command, launch.volumes)


class _Container:
    """A container that runs nothing and exits 0 (what ``run`` asks of one)."""

    def attach(self, **_):
        return iter(())

    def start(self):
        pass

    def wait(self):
        return {"StatusCode": 0}

    def remove(self, force):
        pass


class _Client:
    """Stands in for the docker daemon: an image naming ``user``, and the arguments the container got."""

    def __init__(self, user: str) -> None:
        self.images = SimpleNamespace(get=lambda name: SimpleNamespace(attrs={"Config": {"User": user}}))
        self.containers = SimpleNamespace(create=self._create)
        self.created: dict = {}

    def _create(self, image, **kwargs):
        self.created = kwargs
        return _Container()


@pytest.mark.parametrize("named, runs_as", [("1000:1000", (1000, 1000)), ("", (1000, 1000)), ("0", (1000, 1000)),
                                            ("root", (1000, 1000)), ("1234", (1234, 1234))])
def test_as_root_the_container_runs_as_the_images_non_root_user(tmp_path, monkeypatch, named, runs_as):
    """Root's container runs as the image's user (the suite's 1000:1000 where the image names root, a name or
    nobody), never as root, with no capabilities; the output folder is lent to that user and given back
    (tests/images/test_images.py runs the same with the daemon)."""
    owners = []
    monkeypatch.setattr(os, "getuid", lambda: 0)
    monkeypatch.setattr(os, "getgid", lambda: 0)
    monkeypatch.setattr(os, "chown", lambda path, uid, gid: owners.append((str(path), uid, gid)))
    client, out = _Client(named), tmp_path / "out"
    assert run(client, names.default_spec("shared"), ["--help"], out) == 0
    made = client.created
    assert made["user"] == "%d:%d" % runs_as and made["cap_drop"] == ["ALL"], made
    assert made["security_opt"] == ["no-new-privileges"] and made["network_mode"] == "none", made
    assert owners == [(str(out), *runs_as), (str(out), 0, 0)]  # lent for the run, the caller's again after


def test_a_missing_base_is_named_with_the_one_command_that_builds_it():
    assert names.base_hint(names.TORCH_BASE) == ("build it with `bash dockerfiles/build_images.sh torch` in the "
                                                 "msprobe checkout (or pass --base)")
    assert names.base_hint(names.PLAIN_BASE).startswith("build it with `bash dockerfiles/build_images.sh base`")
    assert names.base_hint(names.MSADAPTER_BASE).startswith("build it with `bash dockerfiles/build_images.sh msadapter`")
    script = (REPO / "dockerfiles" / "build_images.sh").read_text()
    for which in names.BASE_BUILDS.values():  # each is an argument the script takes
        assert f"            {which}) build_" in script or f"            {which}) build_base" in script, which
    assert "pull or build it first" in names.base_hint("my/cann-torch-npu:8.0")


def _readme_pairs() -> List[Tuple[str, str]]:
    """(command, the error line the README shows under it) of the README's bash blocks."""
    lines = [line for block in code_blocks(README.read_text(encoding="utf-8"), "bash") for line in block.splitlines()]
    return [(command, said[2:]) for command, said in zip(lines, lines[1:]) if not command.startswith("#")
            and said.startswith("# msprobe: error:")]


def test_the_readme_refusals_are_said_as_shown(tmp_path):
    pairs = _readme_pairs()
    assert len(pairs) >= 6
    (tmp_path / "dump").mkdir()
    env = dict(os.environ, DOCKER_HOST="unix:///no/such.sock", PATH=f"{MSPROBE.parent}{os.pathsep}{os.environ['PATH']}")
    for command, said in pairs:
        done = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2 and done.stderr == said.replace("$PWD", str(tmp_path)) + "\n", (command, done.stderr)
        assert not (tmp_path / "out").exists(), command
