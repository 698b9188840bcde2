"""MCJ101 through installed libraries: their functions' facts come from their own source.

A small package is written into a temporary site directory (a real package on disk with its
`*.dist-info`, read for real, never imported): `save_all()` and `Manager.save()` reach a barrier
two calls down, `describe()` does no collective work. No table lists any of them.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from mcjax_lint import engine, libraries
from mcjax_lint.config import load_config
from mcjax_lint.files import Excluder, discover
from mcjax_lint.runner import lint_files
from mcjax_lint.settings import AnalysisSettings

PACKAGE = {
    "fakeckpt/__init__.py": "from fakeckpt.manager import Manager, describe, save_all\n",
    "fakeckpt/_sync.py": """\
        from jax.experimental import multihost_utils


        def barrier(name):
            multihost_utils.sync_global_devices(name)
        """,
    "fakeckpt/manager.py": """\
        from fakeckpt import _sync


        def save_all(state):
            _write(state)
            _sync.barrier("save_all")


        def _write(state):
            return state


        def describe(state):
            return repr(state)


        class Manager:
            def __init__(self, directory):
                self.directory = directory

            def save(self, step, state):
                _write(state)
                _sync.barrier(f"save_{step}")
        """,
    "fakeckpt-1.2.dist-info/METADATA": "Metadata-Version: 2.1\nName: fakeckpt\nVersion: 1.2\nRequires-Dist: jax\n",
    "fakeckpt-1.2.dist-info/top_level.txt": "fakeckpt\n",
}

PROGRAM = """\
import jax
from fakeckpt import Manager, describe, save_all


def finish(state):
    if jax.process_index() == 0:  # hazard: a barrier inside the library
        save_all(state)
    if jax.process_index() == 0:  # correct: describe() does no collective work
        print(describe(state))
    return state


def checkpoint(directory, step, state):
    mngr = Manager(directory)
    if jax.process_index() == 0:  # hazard: the library's method waits at a barrier
        mngr.save(step, state)
"""


def write_site(root: Path) -> Path:
    site = root / "site"
    for rel, text in PACKAGE.items():
        p = site / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return site


def lines_of(findings) -> list[tuple[str, int]]:
    return sorted((f.code, f.line) for f in findings)


def test_MCJ101_collective_work_inside_an_installed_library(tmp_path):
    site = write_site(tmp_path)
    settings = AnalysisSettings(library_paths=(str(site),))
    findings, errors = engine.analyze_project({"train.py": PROGRAM}, settings)
    assert not errors
    assert lines_of(findings) == [("MCJ101", 6), ("MCJ101", 15)]
    by_line = {f.line: f.message for f in findings}
    assert "`save_all()` → `barrier()` → `multihost_utils.sync_global_devices()` (_sync.py:5)" in by_line[6]
    assert "`Manager.save()`" in by_line[15]


def test_MCJ101_library_summaries_off_or_not_installed(tmp_path):
    """Off, or the package not on the path: only the built-in tables, which do not list it."""
    site = write_site(tmp_path)
    off = AnalysisSettings(library_paths=(str(site),), library_summaries=False)
    assert engine.analyze_project({"train.py": PROGRAM}, off)[0] == []
    missing = AnalysisSettings(library_paths=(str(tmp_path / "nowhere"),))
    assert engine.analyze_project({"train.py": PROGRAM}, missing)[0] == []


def test_only_what_the_project_reaches_is_read(tmp_path):
    site = write_site(tmp_path)
    (site / "fakeckpt" / "unused.py").write_text("import jax\n\ndef f():\n    return jax.devices()\n")
    project = [engine.summarize(PROGRAM, "train.py", "train")]
    got = libraries.library_summaries(project, [str(site)], None)
    assert sorted(s.module for s in got.summaries) == ["fakeckpt", "fakeckpt._sync", "fakeckpt.manager"]
    assert got.packages == {"fakeckpt": "1.2"}
    # A package that does not depend on JAX is not read at all.
    meta = site / "fakeckpt-1.2.dist-info" / "METADATA"
    meta.write_text("Metadata-Version: 2.1\nName: fakeckpt\nVersion: 1.2\nRequires-Dist: requests\n")
    assert libraries.library_summaries(project, [str(site)], None).summaries == []


def test_library_calls_beyond_the_bound_are_reported(tmp_path, monkeypatch):
    """Reading stops `MAX_HOPS` calls into a library; the run then says what it did not read."""
    site = write_site(tmp_path)
    project = [engine.summarize(PROGRAM, "train.py", "train")]
    full = libraries.library_summaries(project, [str(site)], None)
    assert full.not_followed() is None
    monkeypatch.setattr(libraries, "MAX_HOPS", 1)
    cut = libraries.library_summaries(project, [str(site)], None)
    note = cut.not_followed()
    assert note is not None and "more than 1 deep" in note and "`fakeckpt.manager.save_all`" in note
    assert "fakeckpt._sync" not in {s.module for s in cut.summaries}


def _run(root: Path):
    cfg = load_config(None, root)
    project = discover([root], Excluder(root.resolve(), cfg.all_excludes))
    return lint_files(project, project, cfg, jobs=1, use_cache=True, cwd=root)


def test_library_summaries_cached_per_package_version(tmp_path):
    site = write_site(tmp_path)
    root = tmp_path / "proj"
    root.mkdir()
    (root / "pyproject.toml").write_text(f"[tool.mcjax]\nlibrary-paths = [{json.dumps(str(site))}]\n")
    (root / "train.py").write_text(PROGRAM)
    cold = _run(root)
    assert lines_of(cold.findings) == [("MCJ101", 6), ("MCJ101", 15)]
    assert cold.stats.library_modules == 3 and cold.stats.library_modules_read == 3
    (cached,) = list((root / ".mcjax_cache").glob("*/libraries/fakeckpt-1.2.json"))
    assert set(json.loads(cached.read_text())["modules"]) == {"fakeckpt", "fakeckpt._sync", "fakeckpt.manager"}
    # The file now uses a name from outside the project it did not use: the index is rebuilt
    # (the library modules behind a new name may be missing from it); the library is not read.
    (root / "train.py").write_text(PROGRAM + "\n\ndef extra():\n    import fakeckpt\n    return fakeckpt.manager.describe(1)\n")
    again = _run(root)
    assert again.stats.relocation_refused == "new names used from outside the project"
    assert lines_of(again.findings) == [("MCJ101", 6), ("MCJ101", 15)]
    assert again.stats.library_modules == 3 and again.stats.library_modules_read == 0
    # A new version of the library is read again.
    (site / "fakeckpt-1.2.dist-info").rename(site / "fakeckpt-1.3.dist-info")
    newer = _run(root)
    assert newer.stats.library_modules_read == 3
    assert lines_of(newer.findings) == [("MCJ101", 6), ("MCJ101", 15)]

