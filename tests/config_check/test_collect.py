"""Static collection: launch-script and yaml hyperparameters, masked environment, re-packing."""
from __future__ import annotations

import json
import zipfile

from cc_helpers import msprobe

from msprobe.core.config_check.collect import collect_env
from msprobe.core.config_check.masking import Masker
from msprobe.core.config_check.shell import parse_shell

MEGATRON_SCRIPT = r"""#!/bin/bash
# Megatron-style launch script
export CUDA_DEVICE_MAX_CONNECTIONS=1
LR=1e-4   # learning rate
GPT_ARGS="
    --num-layers 2 \
    --lr $LR
    --bf16 --train-iters 10
"
DISTRIBUTED_ARGS="--nproc_per_node 8 --nnodes 1"
torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \
   $GPT_ARGS \
   --data-path '/data/my corpus' --seed=${SEED:-1234} --init-std -0.02 | tee log.txt
"""


def test_shell_parser_reads_megatron_launch_lines():
    assert parse_shell(MEGATRON_SCRIPT) == {
        "nproc_per_node": "8", "nnodes": "1", "num-layers": "2", "lr": "1e-4", "bf16": True,
        "train-iters": "10", "data-path": "/data/my corpus", "seed": "1234", "init-std": "-0.02"}


def test_shell_parser_boolean_flag_before_option_and_plain_python():
    # msprobe turns the first into bf16 = "--train-iters" and ignores the second entirely
    assert parse_shell("torchrun train.py --bf16 --train-iters 10\n") == {"bf16": True, "train-iters": "10"}
    assert parse_shell("python train.py --lr 1 --fp16\n") == {"lr": "1", "fp16": True}
    assert parse_shell("CUDA_VISIBLE_DEVICES=0 python3 -u train.py --lr=0.5 > out.log 2>&1\n") == {"lr": "0.5"}
    assert parse_shell("echo --not-a-launch 1\n") == {}


def test_same_key_twice_with_other_value_keeps_both():
    assert parse_shell("python a.py --lr 1\npython b.py --lr 2\n") == {
        "lr": {"description": "duplicate_value", "values": ["1", "2"]}}
    assert parse_shell("python a.py --lr 1\npython b.py --lr 1.0\n") == {"lr": "1"}


def test_static_pack_cli_and_repack_has_no_duplicates(tmp_path):
    (tmp_path / "train.sh").write_text("torchrun train.py --lr 0.1 --bf16\n")
    (tmp_path / "cfg.yaml").write_text("lr: 0.1\noptimizer:\n  betas: [0.9, 0.95]\n  groups: [{wd: 0.1}]\n")
    for _ in range(2):
        done = msprobe("-f", "pytorch", "config_check", "-d", "train.sh", "cfg.yaml", "-o", "pack.zip", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    names = zipfile.ZipFile(tmp_path / "pack.zip").namelist()
    assert sorted(names) == ["env", "hyperparameters/hyperparameters_static.json", "pip"]
    hyper = json.loads(zipfile.ZipFile(tmp_path / "pack.zip").read("hyperparameters/hyperparameters_static.json"))
    # the shell flag and the yaml key named 'lr' agree, so they are one entry (no false warning later)
    assert hyper == {"lr": "0.1", "bf16": True, "optimizer.betas": [0.9, 0.95], "optimizer.groups.0.wd": 0.1}
    done = msprobe("config_check", "-d", cwd=tmp_path)  # default output, framework defaults to pytorch
    assert done.returncode == 0 and (tmp_path / "config_check_pack.zip").is_file()


def test_static_pack_bad_inputs(tmp_path):
    (tmp_path / "bad.yaml").write_text("a: [1, 2\n")
    (tmp_path / "notes.txt").write_text("x")
    for args, needle in ((["missing.sh"], "missing.sh: no such"), (["bad.yaml"], "bad.yaml line"),
                         (["notes.txt"], "expected a launch script")):
        done = msprobe("-f", "pytorch", "config_check", "-d", *args, "-o", "p.zip", cwd=tmp_path)
        assert done.returncode == 2 and needle in done.stderr and "Traceback" not in done.stderr
        assert not (tmp_path / "p.zip").exists()


def test_secret_names_and_values():
    masker = Masker()
    env = collect_env(masker, {"HF_TOKEN": "hf_abc", "AWS_SECRET_ACCESS_KEY": "s3cr3t", "DB_PASSWORD": "pw",
                               "MY_API_KEY": "key-value-42", "GIT_CREDENTIALS": "cred-value-42", "PGPASSWORD": "pg",
                               "PWD": "/home/u", "NCCL_ALGO": "Ring", "TOKENIZERS_PARALLELISM": "false",
                               "XAUTHORITY": "/x"})
    assert {name: env[name] for name in ("PWD", "NCCL_ALGO", "TOKENIZERS_PARALLELISM", "XAUTHORITY")} == {
        "PWD": "/home/u", "NCCL_ALGO": "Ring", "TOKENIZERS_PARALLELISM": "false", "XAUTHORITY": "/x"}
    for name, value in (("HF_TOKEN", "hf_abc"), ("AWS_SECRET_ACCESS_KEY", "s3cr3t"), ("DB_PASSWORD", "pw"),
                        ("MY_API_KEY", "key-value-42"), ("GIT_CREDENTIALS", "cred-value-42"), ("PGPASSWORD", "pg")):
        assert value not in env[name] and env[name] == masker.token(value)
    assert masker.token("a") != masker.token("b") and masker.token("a") != Masker().token("a")
    hyper = masker.tree({"apiKey": "abc-def", "hub-token": "t1", "num_key_value_heads": "8", "sort_key": "name",
                         "apply_query_key_layer_scaling": True, "password": 1234, "tokenizer-type": "GPT2"})
    assert hyper["num_key_value_heads"] == "8" and hyper["apply_query_key_layer_scaling"] is True
    assert hyper["tokenizer-type"] == "GPT2"
    assert all(hyper[name].startswith("<secret hmac:") for name in ("apiKey", "hub-token", "sort_key", "password"))


def test_cli_pack_masks_process_environment(tmp_path):
    import os
    env = dict(os.environ, MY_SERVICE_TOKEN="do-not-store-me")
    done = msprobe("config_check", "-d", "-o", "p.zip", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    raw = zipfile.ZipFile(tmp_path / "p.zip").read("env").decode()
    assert "do-not-store-me" not in raw and "MY_SERVICE_TOKEN" in raw


def test_identical_inputs_sharing_names_compare_clean(tmp_path):
    """msprobe warns here: a shell flag and yaml keys sharing a last name part ('lr')."""
    (tmp_path / "train.sh").write_text("torchrun train.py --lr 0.1\n")
    (tmp_path / "cfg.yaml").write_text("lr: 0.2\noptim:\n  lr: 0.3\nsched:\n  lr: 0.4\n")
    for name in ("a", "b"):
        done = msprobe("config_check", "-d", "train.sh", "cfg.yaml", "-o", f"{name}.zip", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    from msprobe.core.config_check.compare import compare_packs
    from cc_helpers import sheet_rows
    compare_packs(tmp_path / "a.zip", tmp_path / "b.zip", tmp_path / "out")
    assert sheet_rows(tmp_path / "out", "hyperparameters") == []


def test_dynamic_repack_replaces_the_old_pack(tmp_path):
    from msprobe.core.config_check.formats import load_pack, write_zip
    from msprobe.core.config_check.writer import PackWriter
    write_zip(tmp_path / "p.zip", {"env": b"{}", "pip": b"", "weights/step9/rank0/weight.json": b"{}"})
    writer = PackWriter(tmp_path / "p.zip", key="run")
    writer.put("env", b'{"A": "1"}')
    writer.put("pip", b"torch=2\n")
    assert writer.assemble(rank=0, world_size=1, finished=True)
    pack = load_pack(tmp_path / "p.zip")
    assert sorted(pack.raw) == ["env", "pip"] and pack.duplicates == 0
    assert not (tmp_path / ".p.zip.parts").exists()


def test_a_pack_holds_what_its_launch_script_exports(tmp_path, monkeypatch):
    """The pack's env is the training's: the packing shell's environment as the script changes it for its launch
    commands (exports, `env NAME=value` and `NAME=value` prefixes, unset), $NAME expanded from either."""
    from msprobe.core.config_check.collect import static_entries

    script = tmp_path / "train.sh"
    script.write_text(MEGATRON_SCRIPT + "NCCL_ALGO=Tree\nexport NCCL_ALGO\nexport PATH=/opt/cann/bin:$PATH\n"
                      "unset LEFT_OVER\nenv HCCL_DETERMINISTIC=true torchrun pretrain_gpt.py --lr 1\n"
                      "NOT_LAUNCH=1 echo done\n")
    environ = {"PATH": "/usr/bin", "LEFT_OVER": "1", "NCCL_ALGO": "Ring", "HOME": "/root"}
    env = json.loads(static_entries([script], Masker(), environ)["env"])
    assert env == {"CUDA_DEVICE_MAX_CONNECTIONS": "1", "HCCL_DETERMINISTIC": "true", "HOME": "/root",
                   "NCCL_ALGO": "Tree", "PATH": "/opt/cann/bin:/usr/bin"}, env
    assert json.loads(static_entries([], Masker(), environ)["env"]) == environ  # no script: the shell's own
