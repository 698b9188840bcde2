"""The installed distribution exposes its entry points."""

import importlib.metadata as md
import subprocess
import sys


def test_console_scripts_declared():
    eps = md.distribution("mcjax").entry_points
    scripts = {e.name: e.value for e in eps if e.group == "console_scripts"}
    assert scripts["mcjax-lint"] == "mcjax_lint.cli:main"
    assert scripts["mcjax-guard"] == "runtime_guard.cli:main"
    plugins = {e.name: e.value for e in eps if e.group == "pytest11"}
    assert plugins["mcjax"] == "runtime_guard.pytest_plugin"


def test_modules_run_as_programs():
    for mod in ("mcjax_lint", "runtime_guard"):
        out = subprocess.run([sys.executable, "-m", mod, "--help"], capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, (mod, out.stderr)
        assert "usage" in out.stdout.lower()
