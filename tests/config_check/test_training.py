"""Real training runs (torchrun with 2 ranks on gloo; MindSpore on CPU) in environments that differ
in exactly one thing: each difference shows up in its sheet and nowhere else."""
from __future__ import annotations

import json
import subprocess
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict

import pytest

from cc_helpers import BIN, SCRIPTS, clean_env, msprobe, sheet_rows, summary

ITEMS = ("env", "pip", "dataset", "weights", "hyperparameters", "random")
SHELL = "#!/bin/bash\nLR={lr}\ntorchrun --nproc_per_node 2 train.py --lr $LR --bf16 --train-iters 10\n"
YAML = "model:\n  hidden: 16\ntraining:\n  lr: 0.1\n  epochs: 2\n"
# variant -> (extra environment, libraries (name -> version), lr in run.sh, script arguments, expected errors)
VARIANTS = {
    "identical": ({}, {}, "0.1", [], {}),
    "env": ({"NCCL_ALGO": "Tree"}, {}, "0.1", [], {"env": "error"}),
    "library": ({}, {"deepspeed": "0.15.0", "tinylib": "2.0"}, "0.1", [], {"pip": "error"}),
    "hyperparameter": ({}, {}, "0.2", [], {"hyperparameters": "error"}),
    "seed": ({}, {}, "0.1", ["--seed", "99"], {"random": "error"}),
    "random": ({}, {}, "0.1", ["--extra-random"], {"random": "error"}),
}


def _prepare(folder: Path, lr: str, libraries: Dict[str, str]) -> Path:
    folder.mkdir(parents=True)
    (folder / "run.sh").write_text(SHELL.format(lr=lr))
    (folder / "cfg.yaml").write_text(YAML)
    libs = folder / "libs"  # installed-library metadata, as pip writes it
    for name, version in {"deepspeed": "0.14.0", "tinylib": "1.0", **libraries}.items():
        info = libs / f"{name}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    return libs


def _run(command, folder: Path, env) -> None:
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]


def _collect(root: Path, framework: str) -> Dict[str, Path]:
    jobs = {}
    for name, (extra_env, libraries, lr, args, _) in list(VARIANTS.items()) + [("base", ({}, {}, "0.1", [], {}))]:
        if framework == "mindspore" and name == "library":
            continue  # library collection is framework-independent; covered with torch
        folder = root / name
        libs = _prepare(folder, lr, libraries)
        env = clean_env(PYTHONPATH=str(libs), **extra_env)
        if framework == "pytorch":
            command = [str(BIN / "torchrun"), "--standalone", "--nproc_per_node", "2",
                       str(SCRIPTS / "train_torch.py")]
        else:
            command = [str(BIN / "python"), str(SCRIPTS / "train_mindspore.py")]
        command += ["--out", str(folder / "pack.zip"), "--shell", "run.sh", "cfg.yaml", *args]
        jobs[name] = (command, folder, env)
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda job: _run(*job), jobs.values()))
    return {name: job[1] for name, job in jobs.items()}


@pytest.fixture(scope="module")
def torch_runs(tmp_path_factory):
    return _collect(tmp_path_factory.mktemp("torch_runs"), "pytorch")


@pytest.fixture(scope="module")
def mindspore_runs(tmp_path_factory):
    return _collect(tmp_path_factory.mktemp("ms_runs"), "mindspore")


def _compare(runs, name, framework):
    out = runs[name] / "result"
    done = msprobe("-f", framework, "config_check", "-c", str(runs["base"] / "pack.zip"),
                   str(runs[name] / "pack.zip"), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert "hyperparameters" in done.stdout and "result" in done.stdout  # the summary table
    return out


@pytest.mark.slow
def test_torchrun_pack_layout(torch_runs):
    names = set(zipfile.ZipFile(torch_runs["base"] / "pack.zip").namelist())
    for step in range(3):
        for rank in range(2):
            assert f"weights/step{step}/rank{rank}/weight.json" in names
            assert f"dataset/step{step}/rank{rank}/dataset.json" in names
    assert {"env", "pip", "hyperparameters/hyperparameters_static.json", "random/rank0.json",
            "random/rank1.json"} <= names
    assert not any(p.name.endswith(".parts") for p in torch_runs["base"].iterdir())  # staging removed
    weights = json.loads(zipfile.ZipFile(torch_runs["base"] / "pack.zip").read("weights/step0/rank1/weight.json"))
    assert set(weights) == {"0.weight", "0.bias", "3.weight", "3.bias"}
    assert set(weights["0.weight"]) == {"max", "min", "mean", "norm"}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(VARIANTS))
def test_torch_one_difference(torch_runs, name):
    out = _compare(torch_runs, name, "pytorch")
    expected = {item: VARIANTS[name][4].get(item, "pass") for item in ITEMS}
    assert summary(out) == expected
    _details(out, name)


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in VARIANTS if n != "library"])
def test_mindspore_one_difference(mindspore_runs, name):
    out = _compare(mindspore_runs, name, "mindspore")
    expected = {item: VARIANTS[name][4].get(item, "pass") for item in ITEMS}
    assert summary(out) == expected
    _details(out, name)


def _details(out: Path, name: str) -> None:
    if name == "env":
        row = [r for r in sheet_rows(out, "env") if r["level"] == "error"]
        assert [(r["bench_env_name"], r["bench_value"], r["cmp_value"]) for r in row] == [
            ("NCCL_ALGO", "(unset)", "Tree")]  # bench on the bench side (msprobe swaps them)
    elif name == "library":
        rows = {r["package"]: (r["bench version"], r["cmp version"], r["level"]) for r in sheet_rows(out, "pip")}
        assert rows == {"deepspeed": ("0.14.0", "0.15.0", "error"), "tinylib": ("1.0", "2.0", "warning")}
    elif name == "hyperparameter":
        rows = [r for r in sheet_rows(out, "hyperparameters") if r["level"] != "info"]
        assert [(r["bench_para"], r["bench_value"], r["cmp_value"]) for r in rows] == [("lr", "0.1", "0.2")]
    elif name == "seed":
        rows = [r for r in sheet_rows(out, "random") if r["level"] == "error"]
        assert {(r["op"].split(".")[-1], r["bench_seeds"], r["cmp_seeds"]) for r in rows} >= {
            ("manual_seed" if "torch" in r["op"] else "set_seed", "1234", "99") for r in rows}
        assert {r["rank"] for r in rows} == ({0, 1} if "torch" in rows[0]["op"] else {0})
    elif name == "random":
        rows = [r for r in sheet_rows(out, "random") if r["level"] == "error"]
        assert rows and all(r["bench_count"] == 0 and r["cmp_count"] == 1 for r in rows)
        assert all("train_" in r["call_site"] for r in rows)
