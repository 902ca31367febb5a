"""Fuzz test (issue 29) of ``msprobe config_check --compare DIR1 DIR2``: any pair of checkpoint folders gives a
comparison or the suite's one-line error (exit 2); never a traceback or a hang. The ``.pt`` files are
damaged archives (random members, random pickles, truncations) of a real one."""
from __future__ import annotations

import io
import pickle
import zipfile

import torch
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from msprobe.cli.main import main
from tests.shared.dump_trees import run_command


def _real_pt() -> bytes:
    buffer = io.BytesIO()
    torch.save({"model": {"decoder.layers.0.mlp.linear_fc1.weight": torch.ones(4, 2)}, "iteration": 1}, buffer)
    return buffer.getvalue()


REAL = _real_pt()


def _archive(members) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members:
            archive.writestr(name, data)
    return buffer.getvalue()


def _shared_children(levels: int = 40) -> bytes:
    """A .pt of ``levels`` nested dicts ``{"a": node, "b": node}`` sharing one child (issue 40): a few hundred
    bytes, 2**levels paths to walk."""
    node = {"w": 1}
    for _ in range(levels):
        node = {"a": node, "b": node}
    return _archive([("archive/data.pkl", pickle.dumps({"model": node, "iteration": 1}, protocol=2)),
                     ("archive/version", b"3\n")])


SHARED = _shared_children()
pickles = st.one_of(st.binary(max_size=64),
                    st.recursive(st.one_of(st.none(), st.integers(), st.text(max_size=5), st.floats()),
                                 lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                         st.dictionaries(st.text(max_size=5), inner, max_size=3)),
                                 max_leaves=8).map(lambda value: pickle.dumps(value, protocol=2)))
pt_files = st.one_of(st.just(REAL), st.integers(0, len(REAL)).map(lambda cut: REAL[:cut]), st.binary(max_size=64),
                     st.lists(st.tuples(st.sampled_from(["archive/data.pkl", "archive/data/0", "archive/version",
                                                         "../x", "archive/byteorder"]), pickles),
                              max_size=4, unique_by=lambda m: m[0]).map(_archive))
layouts = st.sampled_from(["iter_0000001/mp_rank_00/model_optim_rng.pt", "release/mp_rank_00/model_optim_rng.pt",
                           "iter_0000001/mp_rank_00_000/model_optim_rng.pt", "iter_0000001/model_optim_rng.pt"])
trackers = st.one_of(st.sampled_from([b"1", b"release", b"", b"x", b"-3", b"99999999999999999999"]), st.binary(max_size=8))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(first=pt_files, second=pt_files, layout=layouts, tracker=trackers)
@example(first=REAL, second=REAL, layout="iter_0000001/mp_rank_00/model_optim_rng.pt", tracker=b"1")
@example(first=REAL[:100], second=REAL, layout="iter_0000001/mp_rank_00/model_optim_rng.pt", tracker=b"1")
@example(first=SHARED, second=REAL, layout="iter_0000001/mp_rank_00/model_optim_rng.pt", tracker=b"1")
def test_checkpoint_compare_command(tmp_path_factory, capsys, first, second, layout, tracker):
    root = tmp_path_factory.mktemp("ckpts")
    for name, data in (("a", first), ("b", second)):
        path = root / name / layout
        path.parent.mkdir(parents=True)
        path.write_bytes(data)
        (root / name / "latest_checkpointed_iteration.txt").write_bytes(tracker)
    args = ["-f", "pytorch", "config_check", "--compare", str(root / "a"), str(root / "b"), "-o",
            str(root / "out.json"), "-q"]
    code, err = run_command(main, capsys, args, (0, 2), 20)
    if first == second == REAL and tracker == b"1" and layout.startswith("iter_0000001/mp_rank_00/"):
        assert code == 0 and (root / "out.json").is_file(), err
    if first == SHARED and tracker == b"1" and layout.startswith("iter_0000001/mp_rank_00/"):
        assert code == 2 and "objects (counting shared ones" in err, err  # bounded, at once
