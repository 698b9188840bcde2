"""The summary pass's module-wide scans share one node list (`summary._nodes`) and skip a scan
the text rules out: same answers as walking the tree with `ast.walk`."""

from __future__ import annotations

import ast

import pytest

from mcjax_lint.analysis.summary import _nodes, summarize_source


def plugins(src: str) -> list[str]:
    return summarize_source(src, "tests/test_a.py", "tests.test_a").test_plugins


@pytest.mark.parametrize("src, expected", [
    ('pytest_plugins = ["pkg.a", "pkg.b"]\n', ["pkg.a", "pkg.b"]),
    ('pytest_plugins = "pkg.a"\n', ["pkg.a"]),
    ("pytest_plugins = names()\n", ["?"]),
    # (in `ast.walk`'s order, breadth first: the top-level statement first)
    ('if True:\n    pytest_plugins: list = ["pkg.a"]\npytest_plugins += ("pkg.b",)\n', ["pkg.b", "pkg.a"]),
    # a fullwidth `ｐ`: Python normalises names (NFKC), so this binds `pytest_plugins` too
    ('\uff50ytest_plugins = ["pkg.a"]\n', ["pkg.a"]),
    ('x = "pytest_plugin"\n', []),
    ("import jax\n", []),
])
def test_pytest_plugins_found_as_python_binds_them(src: str, expected: list[str]) -> None:
    assert plugins(src) == expected


def test_nodes_keep_ast_walk_order_less_context_markers() -> None:
    src = "def f(a, *b):\n    x = [y for y in a if y]\n    return g(x, k=b)[0].t\nclass C(D):\n    z: int = 1\n"
    tree = ast.parse(src)
    walked = [n for n in ast.walk(tree) if not isinstance(n, ast.expr_context)]
    assert _nodes(tree) == walked
