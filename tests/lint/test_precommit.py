"""The real `pre-commit` tool runs the configurations docs/lint.md gives, read from the page
itself, on a temporary git repository: a hazard fails the commit, the fix passes.

The local hook (`language: system`) runs the mcjax-lint of the environment running the tests, as
it runs a user's: its `bin/` is first on PATH, nothing is installed. The README shows the same
block.

The repository hook (`repo:` + `rev:`, this repository's .pre-commit-hooks.yaml) is run with the
page's block, its `repo` and `rev` replaced by a snapshot of this checkout and its commit.
pre-commit installs it (`language: python`) by creating a virtualenv and running `pip install .`
on the snapshot — the real installation path users get. The test keeps it offline: pip may use
only the setuptools wheel that virtualenv ships (to build mcjax) and installs no dependencies;
the hook's runtime dependencies (libcst, rich) come from the environment running the tests
through PYTHONPATH. The mcjax_lint package itself is the copy pip just installed into the hook's
environment (the test checks that)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LINT_DOC = REPO / "docs" / "lint.md"


def documented_config(kind: str, text: str | None = None) -> str:
    """The YAML block docs/lint.md marks as the `kind` ("local" / "repository") configuration."""
    text = LINT_DOC.read_text() if text is None else text
    m = re.search(rf"<!-- pre-commit config \({kind}\)[^>]*-->\n```yaml\n(.*?)```", text, re.S)
    assert m, f"docs/lint.md lost its {kind} pre-commit configuration"
    return m.group(1)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

HELPER = "import jax\n\n\ndef is_main():\n    return jax.process_index() == 0\n"
HAZARD = (
    "from jax.experimental import multihost_utils\n\nfrom pkg.util import is_main\n\n\n"
    "def save(state):\n"
    "    if is_main():\n"
    "        multihost_utils.sync_global_devices('save')\n"
    "    return state\n"
)
FIXED = (
    "from jax.experimental import multihost_utils\n\nfrom pkg.util import is_main\n\n\n"
    "def save(state):\n"
    "    multihost_utils.sync_global_devices('save')\n"
    "    if is_main():\n"
    "        print('saved')\n"
    "    return state\n"
)


def _git_env(home: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.invalid", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@example.invalid", GIT_CONFIG_NOSYSTEM="1", HOME=str(home))
    return env


def _git(cwd: Path, env: dict, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True,
                          timeout=120).stdout


def _snapshot(dest: Path, env: dict) -> str:
    """This checkout's files as they are now (tracked and new, not ignored), committed in a new
    repository that pre-commit can clone; returns the commit."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True, timeout=60).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    _git(dest, env, "init", "-q")
    _git(dest, env, "add", "-A")
    _git(dest, env, "commit", "-q", "-m", "snapshot")
    return _git(dest, env, "rev-parse", "HEAD").strip()


def _offline_pip_env(env: dict, pc_home: Path) -> dict:
    import virtualenv

    embed = Path(virtualenv.__file__).parent / "seed" / "wheels" / "embed"
    paths = sysconfig.get_paths()
    env = dict(env)
    env.update(
        PRE_COMMIT_HOME=str(pc_home),
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(embed),
        PIP_NO_DEPS="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PYTHONPATH=os.pathsep.join(dict.fromkeys([paths["purelib"], paths["platlib"]])),
    )
    env.pop("PIP_CONSTRAINT", None)
    return env


def _pre_commit(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pre_commit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


def _project(tmp_path: Path, env: dict, config: str) -> Path:
    proj = tmp_path / "proj"
    (proj / "pkg").mkdir(parents=True)
    (proj / "pkg" / "__init__.py").write_text("")
    (proj / "pkg" / "util.py").write_text(HELPER)
    (proj / "pkg" / "ckpt.py").write_text(HAZARD)
    (proj / ".pre-commit-config.yaml").write_text(config)
    _git(proj, env, "init", "-q")
    _git(proj, env, "add", "-A")
    return proj


def test_readme_shows_the_documented_local_hook():
    assert documented_config("local") in (REPO / "README.md").read_text()
    assert "pip install mcjax\n" not in LINT_DOC.read_text() + (REPO / "README.md").read_text()


def test_documented_local_hook_fails_on_hazard_and_passes_after_fix(tmp_path):
    """`language: system`: the mcjax-lint next to this interpreter, found on PATH as a user's
    activated environment provides it; pre-commit installs nothing (no network, no jax)."""
    scripts = Path(sysconfig.get_path("scripts"))
    assert (scripts / "mcjax-lint").exists(), f"no mcjax-lint entry point in {scripts}"
    home = tmp_path / "home"
    home.mkdir()
    env = _git_env(home)
    env.update(PATH=os.pathsep.join([str(scripts), env.get("PATH", "")]), PRE_COMMIT_HOME=str(tmp_path / "pc-home"))
    proj = _project(tmp_path, env, documented_config("local"))
    _run_hook_cycle(proj, env)


def test_documented_repository_hook_fails_on_hazard_and_passes_after_fix(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = _git_env(home)
    hook_repo = tmp_path / "hook-repo"
    hook_repo.mkdir()
    rev = _snapshot(hook_repo, env)

    config = documented_config("repository")
    ours = re.sub(r"(?m)^(\s*- repo: )\S+.*$", rf"\g<1>{hook_repo}", config, count=1)
    ours = re.sub(r"(?m)^(\s*rev: )\S+.*$", rf"\g<1>{rev}", ours, count=1)
    assert ours.count(str(hook_repo)) == 1 and ours.count(rev) == 1, ours
    proj = _project(tmp_path, env, ours)
    env = _offline_pip_env(env, tmp_path / "pc-home")
    _run_hook_cycle(proj, env)
    # The hook ran the mcjax_lint that pre-commit installed from the hook repository.
    installed = list((tmp_path / "pc-home").glob("repo*/py_env-*/lib/python*/site-packages/mcjax_lint/cli.py"))
    assert installed, "pre-commit did not install mcjax-lint into the hook's environment"


def _run_hook_cycle(proj: Path, env: dict) -> None:
    out = _pre_commit(proj, env, "run", "--all-files")
    assert out.returncode == 1, out.stdout + out.stderr
    assert "mcjax-lint" in out.stdout and "Failed" in out.stdout
    assert "pkg/ckpt.py:7:5: MCJ101" in out.stdout  # the helper from another file is known

    # pre-commit passes only the changed file: the helper still comes from the whole project.
    out = _pre_commit(proj, env, "run", "--files", "pkg/ckpt.py")
    assert out.returncode == 1 and "pkg/ckpt.py:7:5: MCJ101" in out.stdout, out.stdout + out.stderr

    (proj / "pkg" / "ckpt.py").write_text(FIXED)
    _git(proj, env, "add", "-A")
    out = _pre_commit(proj, env, "run", "--all-files")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "mcjax-lint" in out.stdout and "Passed" in out.stdout

    # A real commit goes through the installed git hook.
    _pre_commit(proj, env, "install")
    (proj / "pkg" / "ckpt.py").write_text(HAZARD)
    _git(proj, env, "add", "-A")
    commit = subprocess.run(["git", "commit", "-q", "-m", "hazard"], cwd=proj, env=env, capture_output=True,
                            text=True, timeout=300)
    assert commit.returncode != 0 and "MCJ101" in commit.stdout + commit.stderr
