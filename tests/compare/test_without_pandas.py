"""compare's package does not bring pandas (its image has none): a comparison from dump.json and from the index,
written as CSV and as the columnar table, runs with pandas unimportable."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "dump" / "golden" / "data" / "statistics-mix"

_SCRIPT = """
import sys


class NoPandas:  # as where pandas is not installed: importing it raises ImportError
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "pandas":
            raise ImportError("No module named 'pandas'")


sys.meta_path.insert(0, NoPandas())
from pathlib import Path
from msprobe.compare.config import CompareConfig
from msprobe.compare.run import run_compare
from msprobe.schema.index import build_index, INDEX_NAME
dump, out = Path(sys.argv[1]), Path(sys.argv[2])
first = run_compare(dump, dump, CompareConfig(output_dir=out / "csv", xlsx=False, quiet=True))
for rank in sorted(dump.glob("step*/rank*")):
    build_index(rank, rank / INDEX_NAME)
second = run_compare(dump, dump, CompareConfig(output_dir=out / "table", xlsx=False, quiet=True, table_max_rows=0))
print(sorted(f.suffix for f in (out / "csv").iterdir()), sorted(f.suffix for f in (out / "table").iterdir()))
print([r["read"]["target"] for r in second.summary["ranks"]], [r["results"] for r in first.summary["ranks"]]
      == [r["results"] for r in second.summary["ranks"]])
"""


def test_compare_runs_without_pandas(tmp_path):
    import shutil

    dump = tmp_path / "dump"
    shutil.copytree(GOLDEN, dump)
    done = subprocess.run([sys.executable, "-c", _SCRIPT, str(dump), str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    suffixes, reads = done.stdout.splitlines()
    assert suffixes == "['.csv', '.csv', '.json'] ['.json', '.parquet', '.parquet']", suffixes
    assert reads == "['index', 'index'] True", reads
