"""msprobe/msadapter: the dump tool for MSAdapter scripts (Debian bullseye, Python 3.9, mindspore 2.0.0,
msadapter 0.1.0), built by `./dev images` (tests/images/conftest.py) and run as the README shows."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from ms_dump_checks import check_dump_against_npy
from msprobe.schema import find_rank_dirs, load_dump
from tests.images.docker_support import MSPROBE, REPO, VERSION, out, readme_command, run, run_readme

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.msadapter, pytest.mark.timeout(3600)]
SCRIPT = REPO / "tests" / "msadapter" / "scripts" / "doc_example.py"
CALLER = 4321  # a user in the docker group, not root: the files must come out as theirs
STEPS = 3


@pytest.fixture(scope="module")
def images(suite_images) -> Path:
    return suite_images


@pytest.fixture
def training() -> Path:
    """A folder with doc 29's MSAdapter example as train.py and its config (tensors: their statistics can be
    checked against the saved arrays), writable by CALLER. Under /tmp itself: pytest's own folders are root's
    alone, and CALLER must reach it."""
    folder = Path(tempfile.mkdtemp(prefix="msadapter-image-", dir="/tmp"))
    shutil.copy(SCRIPT, folder / "train.py")
    (folder / "config.json").write_text(json.dumps({"task": "tensor", "dump_path": "./dump_path", "level": "mix"}))
    for path in (folder, folder / "train.py", folder / "config.json"):
        os.chown(path, CALLER, CALLER)
    yield folder
    shutil.rmtree(folder)


def check_dump(folder: Path, uid: int) -> None:
    """The dump a user finds: every file theirs, each dump.json valid, statistics equal to the saved tensors."""
    dump = folder / "dump_path"
    owners = {p.stat().st_uid for p in dump.rglob("*")}
    assert owners == {uid}, owners
    ranks = find_rank_dirs(dump)
    assert len(ranks) == STEPS
    for rank in ranks:
        doc = load_dump(rank.path / "dump.json")
        assert doc.framework == "mindtorch" and doc.task == "tensor"
        assert "Module.linear1.Linear.forward.0" in doc.data and "Functional.relu.0.backward" in doc.data
    assert check_dump_against_npy(dump) == 84


def test_image_carries_mindspore_2_0_msadapter_and_numpy_1_without_torch(images):
    probe = run(["docker", "run", "--rm", "--network", "none", "--entrypoint", "python", "msprobe/msadapter", "-c",
                 "import sys, importlib.util as u, mindspore, msadapter.pytorch as t, numpy, msprobe.mindspore; "
                 "from msprobe.dump import kernels as k; "
                 "print(sys.version_info[:2], mindspore.__version__, numpy.__version__, float(t.ones(2).sum()), "
                 "u.find_spec('torch'), k.loaded() is not None)"], timeout=300)
    assert probe.returncode == 0, out(probe)
    assert probe.stdout.split("\n")[0] == "(3, 9) 2.0.0 1.24.4 2.0 None True", out(probe)  # kernels: cp39-abi3
    version = run(["docker", "run", "--rm", "--network", "none", "msprobe/msadapter", "--version"])
    assert version.stdout.strip() == f"msprobe {VERSION}", out(version)


def test_docker_run_dumps_an_msadapter_model_as_the_caller(images, training):
    done = run_readme(readme_command("docker run --rm --network none --user"), cwd=training, user=CALLER,
                      timeout=600)
    assert done.returncode == 0, out(done)
    # the dump's C kernels (cp39-abi3) load on the image's Python 3.9: no warning of a slower fallback
    assert "Traceback" not in done.stderr and "msprobe:" not in done.stderr, done.stderr[-3000:]
    check_dump(training, CALLER)


def test_launcher_runs_the_script_in_the_image(images, training):
    done = run_readme(readme_command(".venv/bin/msprobe run msadapter"), cwd=training, timeout=600)
    assert done.returncode == 0, out(done)
    check_dump(training, os.getuid())
    listed = run([MSPROBE, "run", "msadapter", "--", "inspect", "dump_path"], cwd=training)  # as the caller too
    assert listed.returncode == 0 and f"total: {STEPS} rank dump(s)" in listed.stdout, out(listed)


def test_image_build_msadapter_again_from_dist(images):
    built = run_readme(readme_command(".venv/bin/msprobe image build msadapter"), cwd=images, timeout=1800)
    assert built.returncode == 0, out(built)
    assert f"image: built msprobe/msadapter:{VERSION} and msprobe/msadapter:latest" in built.stdout, out(built)


def test_a_dist_without_a_python_3_9_dump_wheel_is_refused_in_one_line(images, tmp_path):
    dist = tmp_path / "dist"
    dist.mkdir()
    for wheel in (images / "dist").glob("msprobe_*.whl"):  # the dump's as if built for the host's CPython only
        shutil.copy(wheel, dist / wheel.name.replace("-cp39-abi3-", "-cp311-cp311-"))
    refused = run([MSPROBE, "image", "build", "msadapter", "--dist", dist], timeout=900)
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, out(refused)
    assert refused.stderr.startswith(f"msprobe: error: pip download of msprobe-dump=={VERSION} for the image failed")
    assert f"MSPROBE_PURE_WHEEL=1 pip wheel --no-deps -w {dist} ./tools/dump" in refused.stderr, out(refused)
