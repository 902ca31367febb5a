"""Fuzz test (issue 29) of ``msprobe config_check -c A.zip B.zip``: any pair of packs gives a comparison or
the suite's one-line error (exit 2); never a traceback, a hang or a file outside the output folder.
Seeds: a zip bomb, a pack entry escaping its folder, a truncated zip."""
from __future__ import annotations

import io
import json
import zipfile

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msprobe.cli.main import main
from tests.shared.dump_trees import json_value, run_command

ENTRIES = ["env", "pip", "hyperparameters/hyperparameters_static.json", "hyperparameters/hyperparameters_dynamic.json",
           "weights/step0/rank0/weight.json", "dataset/step0/rank0/dataset.json", "random/rank0.json",
           "../escape.json", "/abs.json", "weights/stepX/rank0/weight.json"]


def _zip(members) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as pack:
        for name, data in members:
            pack.writestr(name, data)
    return buffer.getvalue()


member_data = st.one_of(json_value.map(lambda v: json.dumps(v).encode()), st.binary(max_size=64),
                        st.text(max_size=40).map(str.encode))
packs = st.one_of(st.lists(st.tuples(st.sampled_from(ENTRIES), member_data), max_size=5, unique_by=lambda m: m[0]).map(_zip),
                  st.binary(max_size=80))
BOMB = _zip([("env", b"0" * (40 * 2**20))])  # 40 MiB of one byte: ~40 KiB compressed, far past the ratio limit
VALID = _zip([("env", b'{"PATH": "/bin"}'), ("pip", b"torch=2.13.0"),
              ("hyperparameters/hyperparameters_static.json", b'{"lr": "0.1"}')])


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(bench=packs, cmp=packs)
@example(bench=BOMB, cmp=VALID)
@example(bench=_zip([("../escape.json", b"{}")]), cmp=VALID)
@example(bench=VALID[:len(VALID) // 2], cmp=VALID)
@example(bench=VALID, cmp=VALID)
def test_config_check_compare_command(tmp_path_factory, capsys, bench, cmp):
    root = tmp_path_factory.mktemp("packs")
    (root / "a.zip").write_bytes(bench)
    (root / "b.zip").write_bytes(cmp)
    args = ["-f", "pytorch", "config_check", "-q", "-c", str(root / "a.zip"), str(root / "b.zip"),
            "-o", str(root / "out")]
    code, err = run_command(main, capsys, args, (0, 1, 2), 20)
    if bench == cmp == VALID:  # two whole packs compare
        assert code == 0 and (root / "out").is_dir(), err
    assert not (root.parent / "escape.json").exists()
    assert sorted(p.name for p in root.iterdir() if p.name not in ("a.zip", "b.zip")) in ([], ["out"])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(text=st.one_of(st.text(max_size=200), st.binary(max_size=120).map(lambda raw: raw.decode("latin-1")),
                      json_value.map(json.dumps)),
       suffix=st.sampled_from([".sh", ".yaml", ".yml", ".txt"]))
@example(text="torchrun train.py --api-key sk-secret --password hunter2 --bf16\n", suffix=".sh")
# issue 40: an option set twice is stored as duplicate_value, each value masked
@example(text="torchrun train.py --password hunter2 --lr 1\ntorchrun train.py --password=sk-secret\n", suffix=".sh")
@example(text="password: hunter2\nauth:\n  password: sk-secret\n", suffix=".yaml")
@example(text="a:\n" + "  - " * 2000 + "x\n", suffix=".yaml")
def test_config_check_pack_command(tmp_path_factory, capsys, text, suffix):
    root = tmp_path_factory.mktemp("scripts")
    script = root / f"launch{suffix}"
    script.write_bytes(text.encode("utf-8", "surrogateescape"))
    args = ["-f", "pytorch", "config_check", "-q", "-d", str(script), "-o", str(root / "pack.zip")]
    code, err = run_command(main, capsys, args, (0, 2), 20)
    if code == 0:
        with zipfile.ZipFile(root / "pack.zip") as pack:
            packed = b"".join(pack.read(name) for name in pack.namelist())
        assert b"hunter2" not in packed and b"sk-secret" not in packed
