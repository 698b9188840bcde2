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


def test_wheel_ships_every_module_and_rule_page(tmp_path):
    """A regular (non-editable) install has every package and the rule pages SARIF embeds."""
    import zipfile
    from pathlib import Path

    from mcjax_lint.rules import RULES

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(tmp_path), str(root)],
        capture_output=True, text=True, timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    (wheel,) = tmp_path.glob("mcjax-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    sources = {
        p.relative_to(root).as_posix()
        for pkg in ("mcjax_lint", "runtime_guard")
        for p in (root / pkg).rglob("*.py")
        if "__pycache__" not in p.parts
    }
    assert sources - names == set(), "modules missing from the wheel (list their package in pyproject)"
    pages = {f"mcjax_lint/rule_docs/{code}.md" for code in [*RULES, "MCJ900"]}
    assert pages - names == set()
    if sys.implementation.name == "cpython" and sys.version_info >= (3, 11):
        # The C hot path is compiled into the wheel (optional: a failed build leaves the Python path).
        assert any(n.startswith("runtime_guard/_hotpath") and n.endswith((".so", ".pyd")) for n in names), names
