"""MSAdapter (MindTorch) under test against native torch, both in the Python 3.9 rootfs (MindSpore 2.0.0,
msadapter 0.1.0, torch 1.12.1): doc 29's example dumped there, scripts generated and run there."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import msadapter_env as mae

pytestmark = [pytest.mark.msadapter, pytest.mark.slow]
REPO = Path(__file__).resolve().parents[2]
DOC_EXAMPLE = REPO / "tests" / "msadapter" / "scripts" / "doc_example.py"
RUNNER = Path(__file__).resolve().parent / "scripts" / "run_scripts.py"
APIS = ("Functional.linear.0", "Functional.relu.0")


def test_doc29_dump_reproduced_through_msadapter(tmp_path):
    mae.require_rootfs()
    mae.ensure_rootfs()
    env = {"PYTHONPATH": mae.repo_pythonpath(["shared", "tools/dump", "tools/op_generate"])}
    (tmp_path / "config.json").write_text(json.dumps({"task": "tensor", "dump_path": "./dump_path", "level": "L1"}))
    lines = ["set -e"]
    for api in APIS:
        for propagation in ("forward", "backward"):
            for mode in ("random_data", "real_data"):
                config = tmp_path / f"{api}.{propagation}.{mode}.json"
                config.write_text(json.dumps({"dump_json_path": "dump_path/step0/rank/dump.json", "api_name": api,
                                              "propagation": propagation, "data_mode": mode}))
                lines.append(f"python3.9 -m msprobe.op_generate -i {config.name} -o out/{mode}")
    (tmp_path / "generate.sh").write_text("\n".join(lines) + "\n")
    scripts = [f"out/{m}/{a}.{p}.py" for m in ("random_data", "real_data") for a in APIS
               for p in ("forward", "backward")]
    steps = [[str(DOC_EXAMPLE)], ["-c", "import subprocess; subprocess.run(['bash', 'generate.sh'], check=True)"],
             [str(RUNNER), "results.json"] + scripts]
    for args in steps:
        done = mae.run_py39(args, cwd=tmp_path, env=env, timeout=600)
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert json.loads((tmp_path / "dump_path/step0/rank/dump.json").read_text())["framework"] == "mindtorch"
    text = (tmp_path / "out/real_data/Functional.linear.0.backward.py").read_text()
    assert "msadapter.pytorch.nn.functional.linear(*args" in text and "torch.nn.functional.linear(*args" in text
    results = json.loads((tmp_path / "results.json").read_text())
    assert len(results) == 8
    for result in results:
        assert result["code"] == 0, result
        backward = result["script"].endswith(".backward.py")
        assert result["result"][0]["Backward Test Success"] == ("pass" if backward else "")
        for row in result["details"]:
            assert row["Status"] == "pass" and row["Tested Dtype"] == "float32" and row["Bench Dtype"] == "float64"
    linear = next(r for r in results if r["script"] == "Functional.linear.0.backward.py")
    assert [row["Shape"] for row in linear["details"]] == ["[10, 4]", "[10, 8]", "[4, 8]", "[4]"]
