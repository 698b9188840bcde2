"""Both passes skip their walks for `global`/`nonlocal` statements where the text rules them out
(`semantics.may_declare`): the text test must say "maybe" wherever the tree has one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mcjax_lint.analysis.semantics import may_declare

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("src, maybe", [
    ("def f():\n    global x\n    x = 1\n", True),
    ("def f():\n    def g():\n        nonlocal y\n", True),
    ("def f(): global x\n", True),
    ("x = 1; global y\n", True),
    ("if a:\n    pass\nelse: global z\n", True),
    ("def f():\n    x = 1; \\\n    global y\n", True),
    ("def f():\r    global x\r", True),
    ("def f():\n\x0c    global x\n", True),
    ("\ufeffglobal x\n", True),
    ("multihost_utils.sync_global_devices('x')\n", False),
    ('"""A global array."""\nglobal_step = 1\n', False),
    ("x = {'a': globals()}\n", False),
])
def test_declaration_text_test(src: str, maybe: bool) -> None:
    assert may_declare(src) is maybe
    if not maybe:
        assert not any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(ast.parse(src.lstrip("\ufeff"))))


def test_no_declaration_the_text_test_misses() -> None:
    # every fixture and every module of the linter: a file with a `global`/`nonlocal` statement
    # is always one the text test keeps
    seen = 0
    for path in sorted([*(ROOT / "fixtures").rglob("*.py"), *(ROOT / "mcjax_lint").rglob("*.py")]):
        src = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(src)
        except SyntaxError:
            continue
        if any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(tree)):
            seen += 1
            assert may_declare(src), path
    assert seen > 0
