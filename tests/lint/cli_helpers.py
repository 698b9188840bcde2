"""Shared helpers for the lint tooling tests: write small projects, run the real CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

# Small programs whose hazards the analysis must find (no mocks: the real engine runs).
HELPER = """\
import jax


def is_main():
    return jax.process_index() == 0
"""

HAZARD = """\
from jax.experimental import multihost_utils

from pkg.util import is_main


def save(state):
    if is_main():
        multihost_utils.sync_global_devices("save")
    return state
"""

SET_ORDER = """\
from jax.experimental import multihost_utils


def sync_all(names):
    for name in set(names):
        multihost_utils.sync_global_devices(name)
"""

CLEAN = """\
import jax


def log(msg):
    if jax.process_index() == 0:
        print(msg)
"""


def make_project(root: Path, files: dict[str, str], pyproject: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("[project]\nname = 'demo'\nversion = '0'\n" + textwrap.dedent(pyproject))
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            p.write_bytes(text)
        else:
            p.write_text(text)
    return root


def demo_project(root: Path, pyproject: str = "") -> Path:
    return make_project(root, {
        "pkg/__init__.py": "",
        "pkg/util.py": HELPER,
        "pkg/ckpt.py": HAZARD,
        "pkg/order.py": SET_ORDER,
        "pkg/log.py": CLEAN,
    }, pyproject)


def run_cli(cwd: Path, *args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mcjax_lint", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


def run_json(cwd: Path, *args: str) -> tuple[int, list[dict], str]:
    out = run_cli(cwd, "--format", "json", *args)
    return out.returncode, json.loads(out.stdout or "[]"), out.stderr


def codes_by_file(findings: list[dict]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for f in findings:
        out.setdefault(f["path"], []).append(f["code"])
    return out
