"""The cache only saves time: corrupt, tampered, stale or unwritable caches never change results,
and a warm run recomputes only what changed."""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

from cli_helpers import demo_project

from mcjax_lint.config import load_config
from mcjax_lint.files import Excluder, discover
from mcjax_lint.runner import lint_files


def _run(root: Path, targets: list[str] | None = None, cache: bool = True):
    cfg = load_config(None, root)
    project = discover([root], Excluder(root.resolve(), cfg.all_excludes))
    tl = [(root / t).resolve() for t in targets] if targets else project
    res = lint_files(tl, project, cfg, jobs=1, use_cache=cache, cwd=root)
    key = sorted((f.path, f.line, f.column, f.code, f.message) for f in res.findings)
    return key, res


def _cache_dir(root: Path) -> Path:
    (d,) = [p for p in (root / ".mcjax_cache").iterdir() if p.is_dir()]
    return d


def _age_cache(root: Path) -> None:
    """Make the recorded digests older than the files' mtimes by more than the racy margin."""
    past = time.time() - 10
    for p in root.rglob("*.py"):
        os.utime(p, (past, past))


def test_warm_run_reads_nothing_and_one_edit_recomputes_one_file(tmp_path):
    root = demo_project(tmp_path)
    _age_cache(root)
    cold, res = _run(root)
    assert res.stats.summarized == 5 and res.stats.analyzed >= 1
    warm, res = _run(root)
    assert warm == cold
    assert res.stats.read == 0 and res.stats.summarized == 0 and res.stats.analyzed == 0
    assert res.stats.findings_cached == 5 and not res.stats.index_built

    # An edit that leaves the file's summary alone: one file re-read, re-summarised, re-analysed;
    # the project index comes from the cache.
    order = root / "pkg" / "order.py"
    order.write_text(order.read_text() + "\n# a comment\n")
    again, res = _run(root, ["pkg/order.py"])
    assert res.stats.summarized == 1 and not res.stats.index_built
    assert again == [k for k in cold if k[0] == "pkg/order.py"]

    # The same for a file the prefilter skipped: its answer is known without the index at all.
    log = root / "pkg" / "log.py"
    log.write_text(log.read_text() + "\n# a comment\n")
    again, res = _run(root, ["pkg/log.py"])
    assert again == [] and res.stats.summarized == 1 and res.stats.prefiltered == 1
    assert "index" not in res.stats.timings  # neither built nor loaded


def test_same_size_rewrite_with_restored_mtime_is_seen(tmp_path):
    root = demo_project(tmp_path)
    ckpt = root / "pkg" / "ckpt.py"
    before, _ = _run(root)
    st = ckpt.stat()
    text = ckpt.read_text()
    # Same length, same mtime: only the content (and ctime) differ.
    ckpt.write_text(text.replace("if is_main():", "if is_mai_():"))  # an unknown name: no finding
    os.utime(ckpt, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert ckpt.stat().st_size == st.st_size
    after, _ = _run(root)
    fresh, _ = _run(root, cache=False)
    assert after == fresh and after != before


def test_corrupt_cache_files_are_ignored(tmp_path):
    root = demo_project(tmp_path)
    reference, _ = _run(root, cache=False)
    _run(root)
    d = _cache_dir(root)
    for p in [d / "files.json", *d.glob("findings-*.json"), *d.glob("index-*.pickle"), *(d / "summaries").iterdir()]:
        p.write_bytes(b"\x00garbage{")
    got, _ = _run(root)
    assert got == reference
    got, _ = _run(root)
    assert got == reference


def test_deleted_summaries_are_recomputed(tmp_path):
    root = demo_project(tmp_path)
    reference, _ = _run(root, cache=False)
    _run(root)
    d = _cache_dir(root)
    for p in (d / "summaries").iterdir():
        p.unlink()
    for p in d.glob("index-*.pickle"):
        p.unlink()
    (root / "pkg" / "order.py").write_text((root / "pkg" / "order.py").read_text() + "\n")
    got, _ = _run(root)
    assert got == reference


class _Evil:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_forged_pickles_are_never_loaded(tmp_path):
    root = demo_project(tmp_path)
    reference, _ = _run(root)
    marker = tmp_path / "pwned"
    evil = pickle.dumps(_Evil(str(marker)))
    d = _cache_dir(root)
    (index_file,) = d.glob("index-*.pickle")
    mac, fp, _ = index_file.read_bytes().split(b"\n", 2)
    # The index: same fingerprint, payload replaced, signature kept or zeroed: both refused.
    for sig in (mac, b"0" * len(mac)):
        index_file.write_bytes(sig + b"\n" + fp + b"\n" + evil)
        (root / "pkg" / "order.py").write_text((root / "pkg" / "order.py").read_text() + "#\n")
        got, res = _run(root)
        assert not marker.exists()
        assert res.stats.index_built  # rebuilt instead of loaded
    # The summaries the index is rebuilt from.
    for p in (d / "summaries").iterdir():
        p.write_bytes(p.read_bytes().split(b"\n", 1)[0] + b"\n" + evil)
    (root / "pkg" / "util.py").write_text((root / "pkg" / "util.py").read_text() + "\n\ndef extra():\n    return 1\n")
    got, res = _run(root)
    assert not marker.exists() and res.stats.index_built
    fresh, _ = _run(root, cache=False)
    assert got == fresh
    assert [k for k in got if k[0] == "pkg/ckpt.py"] == [k for k in reference if k[0] == "pkg/ckpt.py"]


def test_unwritable_cache_location_still_lints(tmp_path):
    root = demo_project(tmp_path, "[tool.mcjax]\ncache-dir = 'blocker/cache'\n")
    (root / "blocker").write_text("a file where the cache directory should go")
    reference, _ = _run(root, cache=False)
    got, _ = _run(root)
    assert got == reference
    got, _ = _run(root)
    assert got == reference


def test_settings_change_is_never_served_from_the_old_cache(tmp_path):
    root = demo_project(tmp_path)
    before, _ = _run(root)
    assert any(k[0] == "pkg/ckpt.py" and k[3] == "MCJ101" for k in before)
    # Declaring the helper benign changes the analysis settings: findings must follow.
    (root / "pyproject.toml").write_text("[tool.mcjax]\nbenign-functions = ['jax.experimental.multihost_utils.*']\n")
    after, _ = _run(root)
    fresh, _ = _run(root, cache=False)
    assert after == fresh
    assert not any(k[0] == "pkg/ckpt.py" and k[3] == "MCJ101" for k in after)


def _timings(err: str) -> dict[str, str]:
    line = next(ln for ln in err.splitlines() if ln.startswith("timings: ") and "summarized=" in ln)
    return dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)


def test_cache_without_a_project_root_lives_in_the_working_directory(tmp_path):
    """Outside any git repository or pyproject.toml, a second run re-lints only what changed (the
    cache lives in the working directory, as ruff's does)."""
    import subprocess
    import sys

    from cli_helpers import CLEAN, SET_ORDER

    from mcjax_lint.files import find_project_root

    work = tmp_path / "scripts"
    work.mkdir()
    if find_project_root(work) is not None:
        import pytest

        pytest.skip(f"{tmp_path} is inside a project ({find_project_root(work)})")
    (work / "order.py").write_text(SET_ORDER)
    (work / "log.py").write_text(CLEAN)
    _age_cache(work)

    def lint():
        out = subprocess.run([sys.executable, "-m", "mcjax_lint", "--timings", "--no-show-source", "."], cwd=work,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 1, out.stderr
        return out.stdout, _timings(out.stderr)

    cold_out, cold = lint()
    assert "order.py:5:17: MCJ201" in cold_out
    assert cold["summarized"] == "2"
    assert (work / ".mcjax_cache").is_dir()
    warm_out, warm = lint()
    assert warm_out == cold_out
    assert (warm["read"], warm["summarized"], warm["analyzed"]) == ("0", "0", "0"), warm
    (work / "log.py").write_text(CLEAN + "\n# edited\n")
    edited_out, edited = lint()
    assert edited_out == cold_out
    assert edited["summarized"] == "1", edited
