"""Cache entries shared by clones (tests/support/cached_venv.py): an entry built from one checkout's venv
stays valid, or is rebuilt, once that venv is deleted; it is never used broken."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from tests.support import cached_venv, upstream_msprobe
from tests.support.cached_venv import ensure_venv, is_valid, keyed_dir, prune_stale


def _checkout_site(tmp_path: Path, name: str) -> Path:
    """A stand-in for a clone's site-packages: one module saying which clone it belongs to."""
    site = tmp_path / name / ".venv" / "lib" / "site-packages"
    site.mkdir(parents=True)
    (site / "which_clone.py").write_text(f"NAME = {name!r}\n")
    return site


def _entry(cache: Path, site: Path) -> Path:
    """An entry that reads ``site`` through a .pth line, as the upstream msprobe venvs do."""
    def build(root: Path) -> None:
        purelib = subprocess.check_output([str(root / "bin" / "python"), "-c",
                                           "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True)
        Path(purelib.strip(), "zz_suite.pth").write_text(f"{site}\n")
    root = keyed_dir(cache / "upstream", "probe-1.0", [site])
    return ensure_venv(root, recipe={"probe": "1.0"}, depends_on=[site], build=build)


def _clone_seen(entry: Path) -> str:
    done = subprocess.run([str(entry / "bin" / "python"), "-c", "import which_clone; print(which_clone.NAME)"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_an_entry_outlives_the_clone_that_built_it(tmp_path):
    cache = tmp_path / "cache"
    first = _checkout_site(tmp_path, "clone_a")
    entry_a = _entry(cache, first)
    assert _clone_seen(entry_a) == "clone_a"

    shutil.rmtree(tmp_path / "clone_a")  # the clone that built the entry is deleted
    assert not is_valid(entry_a, {"probe": "1.0"}, [first])

    second = _checkout_site(tmp_path, "clone_b")
    entry_b = _entry(cache, second)  # another checkout asks: it gets a working entry of its own
    assert entry_b != entry_a and _clone_seen(entry_b) == "clone_b"

    prune_stale(cache / "upstream")  # the dead clone's entry goes; the live one stays
    assert not entry_a.exists() and entry_b.exists() and _clone_seen(entry_b) == "clone_b"

    rebuilt = _entry(cache, _checkout_site_at(first))  # a new clone at the old path
    assert rebuilt == entry_a and _clone_seen(rebuilt) == "clone_a"


def _checkout_site_at(site: Path) -> Path:
    site.mkdir(parents=True, exist_ok=True)
    (site / "which_clone.py").write_text("NAME = 'clone_a'\n")
    return site


def test_an_entry_built_to_another_recipe_or_left_half_built_is_rebuilt(tmp_path):
    site = _checkout_site(tmp_path, "clone")
    entry = _entry(tmp_path / "cache", site)
    assert is_valid(entry, {"probe": "1.0"}, [site])
    assert not is_valid(entry, {"probe": "2.0"}, [site])
    (entry / cached_venv.STAMP).unlink()  # a build killed before its stamp
    assert not is_valid(entry, {"probe": "1.0"}, [site])
    assert _clone_seen(_entry(tmp_path / "cache", site)) == "clone"


def test_the_upstream_venvs_are_keyed_by_the_clone_they_read(monkeypatch, tmp_path):
    monkeypatch.setenv("MSPROBE_CACHE", str(tmp_path))
    one = upstream_msprobe.venv_dir("26.2.0")
    monkeypatch.setattr(upstream_msprobe, "suite_site_packages", lambda: tmp_path / "other" / "site-packages")
    other = upstream_msprobe.venv_dir("26.2.0")
    assert one != other and one.parent == other.parent == tmp_path / "upstream"
