"""Secrets never reach a pack or a report: every byte of every member is searched for them."""
from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

from cc_helpers import msprobe, sheet_rows

from msprobe.core.config_check.compare import compare_packs
from msprobe.core.config_check.masking import KEY_ENV

GITHUB = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
JWT = ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
       "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U")
ENV = {
    "GITHUB_PAT": "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
    "DATABASE_URL": "postgres://dbuser:dbpass-s3cret@db.example.com/db",
    "HTTPS_PROXY": "http://proxyuser:proxy-pw-42@proxy.example.com:3128",
    "HF_TOKEN": "plain-hub-value-1",
    "MYSQL_PWD": "mysql-pw-77",
    "SOME_SETTING": GITHUB,                         # token formats under names that say nothing
    "UNRELATED": "id=AKIAIOSFODNN7EXAMPLE",
    "TOOL_CONFIG": "hf_" + "Zq8Wx7Vc6Bn5Mm4Ll3Kk2Jj1Hh0Gg9Ff8",
    "CALLBACK": JWT,
}
SCRIPT = ("torchrun --nproc_per_node 2 train.py --api-key sk-live-abcdef12345 --password 'pass word 99' "
          "--lr 0.1 --wandb-token=wb-tok-555 --bf16\n")
YAML = ("hub:\n  hub_token: yaml-hub-token-1\n  api_key: yaml-api-key-2\ndb:\n  password: 123456789\n"
        "model:\n  num_key_value_heads: 8\n  tokenizer_type: GPT2BPETokenizer\n")
SECRETS = [value for name, value in ENV.items() if name not in ("DATABASE_URL", "HTTPS_PROXY", "UNRELATED")] + [
    "dbuser", "dbpass-s3cret", "proxyuser", "proxy-pw-42", "AKIAIOSFODNN7EXAMPLE", "sk-live-abcdef12345",
    "pass word 99", "wb-tok-555", "yaml-hub-token-1", "yaml-api-key-2", "123456789"]
USER_KEY = "0123456789abcdef-user-key"


def _pack(folder: Path, name: str, **extra: str) -> Path:
    (folder / "train.sh").write_text(SCRIPT)
    (folder / "cfg.yaml").write_text(YAML)
    env = dict(os.environ, **ENV)
    env.pop(KEY_ENV, None)
    env.update(extra)
    done = msprobe("config_check", "-d", "train.sh", "cfg.yaml", "-o", name, cwd=folder, env=env)
    assert done.returncode == 0, done.stderr
    return folder / name


def _members(zip_path: Path):
    with zipfile.ZipFile(zip_path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _assert_clean(blobs, secrets=SECRETS):
    for where, data in blobs.items():
        for secret in secrets:
            assert secret.encode() not in data, (where, secret)


def test_no_secret_in_any_byte_of_the_pack(tmp_path):
    pack = _pack(tmp_path, "p.zip", **{KEY_ENV: USER_KEY})
    members = _members(pack)
    _assert_clean(members, SECRETS + [USER_KEY])
    env = json.loads(members["env"])
    assert KEY_ENV not in env  # the key itself is never written, not even masked
    assert env["DATABASE_URL"].startswith("postgres://<secret hmac:") and env["DATABASE_URL"].endswith("@db.example.com/db")
    assert env["UNRELATED"].startswith("id=<secret hmac:")
    hyper = json.loads(members["hyperparameters/hyperparameters_static.json"])
    assert hyper["lr"] == "0.1" and hyper["bf16"] is True  # what decides numerics stays readable
    assert hyper["model.num_key_value_heads"] == 8 and hyper["model.tokenizer_type"] == "GPT2BPETokenizer"
    assert hyper["api-key"].startswith("<secret hmac:") and hyper["db.password"].startswith("<secret hmac:")


def test_without_a_key_packs_only_say_both_set(tmp_path):
    """Each pack has its own random key: equal secrets give different masks, so no one can guess them."""
    a, b = _pack(tmp_path, "a.zip"), _pack(tmp_path, "b.zip")
    env_a, env_b = json.loads(_members(a)["env"]), json.loads(_members(b)["env"])
    assert env_a["HF_TOKEN"] != env_b["HF_TOKEN"]
    compare_packs(a, b, tmp_path / "out")
    rows = {r["bench_env_name"]: r for r in sheet_rows(tmp_path / "out", "env")}
    assert rows["HF_TOKEN"]["level"] == "info" and "set on both sides" in rows["HF_TOKEN"]["why"]
    _assert_clean({p.name: p.read_bytes() for p in (tmp_path / "out").iterdir() if p.is_file()})
    _assert_clean(_members(tmp_path / "out" / "result.xlsx"))


def test_the_same_user_key_tells_same_from_different_secret(tmp_path):
    a = _pack(tmp_path, "a.zip", **{KEY_ENV: USER_KEY})
    b = _pack(tmp_path, "b.zip", **{KEY_ENV: USER_KEY, "HF_TOKEN": "another-hub-value-2"})
    compare_packs(a, b, tmp_path / "out")
    rows = {r["bench_env_name"]: r for r in sheet_rows(tmp_path / "out", "env")}
    assert "MYSQL_PWD" not in rows and "GITHUB_PAT" not in rows  # same secret: no difference
    assert rows["HF_TOKEN"]["level"] == "info" and rows["HF_TOKEN"]["why"].startswith("different secret")
    assert not [r for r in sheet_rows(tmp_path / "out", "hyperparameters") if r["bench_para"] == "api-key"]
    done = msprobe("config_check", "-d", "-o", "c.zip", cwd=tmp_path, env=dict(os.environ, **{KEY_ENV: "short"}))
    assert done.returncode == 2 and f"{KEY_ENV} must have at least 16 characters" in done.stderr


def test_secrets_in_msprobe_packs_stay_out_of_the_report(tmp_path):
    """msprobe stores the environment in clear; the report masks what it shows from such a pack."""
    upstream = tmp_path / "up.zip"
    with zipfile.ZipFile(upstream, "w") as archive:
        archive.writestr("env", json.dumps(ENV))
        archive.writestr("pip", "torch=2.1.0\n")
        archive.writestr("hyperparameters/hyperparameters_static.json", json.dumps({"api-key": "sk-live-abcdef12345"}))
    ours = _pack(tmp_path, "ours.zip")
    compare_packs(upstream, ours, tmp_path / "out")
    _assert_clean({p.name: p.read_bytes() for p in (tmp_path / "out").iterdir() if p.is_file()})
    _assert_clean(_members(tmp_path / "out" / "result.xlsx"))


def test_an_option_given_twice_is_masked_in_every_value(tmp_path):
    """``--password a`` and ``--password b`` (or a script and a yaml both setting it) are stored as msprobe's
    ``duplicate_value``: each value is masked (issue 40)."""
    (tmp_path / "train.sh").write_text("torchrun train.py --password first-pw-111 --lr 0.1\n"
                                       "torchrun train.py --password second-pw-222 --lr 0.2\n")
    (tmp_path / "cfg.yaml").write_text("password: yaml-pw-333\nauth:\n  user: bob-user-444\n  realm: r\n")
    env = dict(os.environ)
    env.pop(KEY_ENV, None)
    done = msprobe("config_check", "-d", "train.sh", "cfg.yaml", "-o", "p.zip", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    members = _members(tmp_path / "p.zip")
    _assert_clean(members, ["first-pw-111", "second-pw-222", "yaml-pw-333", "bob-user-444"])
    hyper = json.loads(members["hyperparameters/hyperparameters_static.json"])
    duplicated = hyper["password"]
    assert duplicated["description"] == "duplicate_value" and len(duplicated["values"]) == 3, hyper
    assert all(v.startswith("<secret hmac:") for v in duplicated["values"])
    assert hyper["lr"]["values"] == ["0.1", "0.2"]  # what is not secret stays readable


def test_the_report_says_masked_values_were_not_compared(tmp_path):
    a, b = _pack(tmp_path, "a.zip"), _pack(tmp_path, "b.zip")
    compare_packs(a, b, tmp_path / "out")
    summary = json.loads((tmp_path / "out" / "result.json").read_text())
    notes = json.dumps(summary)
    assert "masked value(s) not compared" in notes and KEY_ENV in notes, notes
