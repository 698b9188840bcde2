"""docs/lint.md's lint-only install works as written: mcjax from a VCS URL with `--no-deps` (no
jax), the linter's dependencies beside it. The URL is `git+file://localhost/...` of a snapshot of
this checkout (no network; pip 23's URL parser wants a host); pip builds mcjax offline from the
setuptools wheel virtualenv ships, into a target directory; libcst and rich come from the
environment running the tests, as the page's `pip install libcst rich` provides them. The
installed copy lints, and `mcjax-lint rule` reads the rule pages shipped inside it."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_precommit import LINT_DOC, HAZARD, HELPER, _git_env, _snapshot

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def test_lint_only_install_from_a_vcs_url(tmp_path):
    doc = " ".join(LINT_DOC.read_text().split())
    assert "python3 -m pip install libcst rich && python3 -m pip install --no-deps ./mcjax" in doc
    assert 'python3 -m pip install --no-deps "mcjax @ git+https://github.com/mcjax/mcjax@<commit>"' in doc

    import virtualenv

    home = tmp_path / "home"
    home.mkdir()
    env = _git_env(home)
    clone = tmp_path / "mcjax"
    clone.mkdir()
    rev = _snapshot(clone, env)
    target = tmp_path / "site"
    embed = Path(virtualenv.__file__).parent / "seed" / "wheels" / "embed"
    env.update(PIP_NO_INDEX="1", PIP_FIND_LINKS=str(embed), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PIP_CONSTRAINT", None)
    out = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                          f"mcjax @ git+file://localhost{clone}@{rev}"], env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert not (target / "jax").exists()

    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "__init__.py").write_text("")
    (proj / "pkg" / "util.py").write_text(HELPER)
    (proj / "pkg" / "ckpt.py").write_text(HAZARD)
    run_env = dict(env, PYTHONPATH=str(target))
    where = subprocess.run([sys.executable, "-c", "import mcjax_lint; print(mcjax_lint.__file__)"], cwd=proj,
                           env=run_env, capture_output=True, text=True, timeout=60)
    assert Path(where.stdout.strip()).is_relative_to(target), where.stdout + where.stderr
    lint = subprocess.run([sys.executable, "-m", "mcjax_lint", "--no-cache", "."], cwd=proj, env=run_env,
                          capture_output=True, text=True, timeout=120)
    assert lint.returncode == 1 and "pkg/ckpt.py:7:5: MCJ101" in lint.stdout, lint.stdout + lint.stderr
    page = target / "mcjax_lint" / "rule_docs" / "MCJ101.md"
    assert f"= help: {os.path.relpath(page, proj)}" in lint.stdout or f"= help: {page}" in lint.stdout, lint.stdout
    rule = subprocess.run([sys.executable, "-m", "mcjax_lint", "rule", "MCJ101"], cwd=proj, env=run_env,
                          capture_output=True, text=True, timeout=60)
    assert rule.returncode == 0 and rule.stdout == page.read_text(encoding="utf-8")
