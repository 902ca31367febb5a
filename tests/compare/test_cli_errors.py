"""Bad input: one line naming the file and field, exit code 2, nothing else written."""
from __future__ import annotations

import json
import shutil

from tests.compare.compare_helpers import msprobe
from tests.support.cli import assert_one_line_error


def test_a_malformed_record_is_named_by_file_and_field(tiny_dumps, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(tiny_dumps["statistics"], broken)
    dump_json = broken / "step0" / "rank" / "dump.json"
    doc = json.loads(dump_json.read_text())
    doc["data"]["Functional.gelu.0.forward"]["output"][0]["Max"] = {"oops": 1}
    dump_json.write_text(json.dumps(doc))
    done = msprobe("compare", "-tp", broken, "-gp", tiny_dumps["statistics"], "-o", tmp_path / "out")
    assert_one_line_error(done, str(dump_json), "Functional.gelu.0.forward.output[0].Max")


def test_paths_and_options(tiny_dumps, tmp_path):
    golden = tiny_dumps["statistics"]
    assert_one_line_error(msprobe("compare", "-tp", tmp_path / "nowhere", "-gp", golden), "nowhere")
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert_one_line_error(msprobe("compare", "-tp", golden, "-gp", golden, "-o", a_file), "-o/--output")
    assert_one_line_error(msprobe("compare", "-tp", golden, "-gp", golden, "-o", tmp_path / "o", "--steps", "x"), "--steps")
    assert_one_line_error(msprobe("compare", "-tp", golden, "-gp", golden, "-o", tmp_path / "o", "--steps", "7"),
                    "nothing to compare", "step0: rank")
    assert not any((tmp_path / "o").glob("compare_result_*"))
