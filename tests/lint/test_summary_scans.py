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


def stop_flag(src: str) -> bool:
    return "n" in summarize_source(src, "pkg/it.py", "pkg.it").functions["pkg.it.fill"].flags


@pytest.mark.parametrize("src, expected", [
    ("def fill(it):\n    x = next(it)\n    if x is None:\n        raise StopIteration\n    return x\n", True),
    # a fullwidth `Ｓ`: the name is normalised (NFKC), so this raises StopIteration too
    ("def fill(it):\n    x = next(it)\n    if x is None:\n        raise \uff33topIteration()\n    return x\n", True),
    ("def fill(it):\n    x = next(it)\n    if x is None:\n        raise ValueError\n    return x\n", False),
    ("def fill(it):\n    return next(it)\n", False),
])
def test_stop_iteration_scan_skipped_only_where_the_text_cannot_name_it(src: str, expected: bool) -> None:
    assert stop_flag(src) is expected


def test_own_nodes_are_the_iter_child_nodes_walk_less_context_markers() -> None:
    from mcjax_lint.analysis.summary import _own_nodes

    def reference(stmts):  # the walk as it was, with `ast.iter_child_nodes`
        todo = list(stmts)
        while todo:
            n = todo.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            yield n
            todo.extend(ast.iter_child_nodes(n))

    src = ("def m(self, a):\n    self.x, (self.y, z) = a\n    self.d[a] += 1\n    del self.e\n"
           "    self.xs.append(lambda q: q.w)\n    def inner():\n        self.hidden = 1\n"
           "    with open(a) as f:\n        print(*[g(k=v) for v in f], **{})\n")
    body = ast.parse(src).body[0].body
    expected = [n for n in reference(body) if not isinstance(n, ast.expr_context)]
    assert list(_own_nodes(body)) == expected


def test_push_children_is_iter_child_nodes_less_context_markers() -> None:
    from mcjax_lint.analysis.summary import _push_children

    tree = ast.parse("x = f(a, *b, k=g(c)[1:2], **d) if p and q(r) else [y for y in z]\n")
    for node in ast.walk(tree):
        got: list = []
        _push_children(node, got)
        assert got == [n for n in ast.iter_child_nodes(node) if not isinstance(n, ast.expr_context)]


def test_top_defs_are_the_first_of_each_name() -> None:
    from mcjax_lint.analysis.summary import _Summarizer

    src = "class f:\n    pass\ndef f():\n    pass\nasync def f():\n    pass\ndef g():\n    pass\nh = 1\n"
    tree = ast.parse(src)
    funcs, named = _Summarizer("m.py", "m", tree, False, src)._top_defs()
    assert funcs == {"f": tree.body[1], "g": tree.body[3]}
    assert named == {"f": tree.body[0], "g": tree.body[3]}


@pytest.mark.parametrize("src", [
    "with mesh:\n    pass\n", "x = 1\nwith Mesh(devs, ('a',)):\n", "  async  with  foo(MESH)", "jax.set_mesh(m)",
    "jax.sharding.use_mesh(m)\n", "xset_mesh(m)\n", "set_meshes(m)\n", "with f():\n    mesh = 1\n",
    "# mesh\nwith x: pass\n", "with x: pass  # mesh\r\n", "\u0130\nwith mesh:\n", "with me\u017fh:\n",
    "WITH\tmesh\rpass", "wit\nh mesh\n", "with_mesh = 1\n", "",
])
def test_mesh_context_searches_lines_as_the_whole_text(src: str) -> None:
    from mcjax_lint.analysis import semantics

    assert semantics.mesh_context_in(src) is bool(semantics._MESH_CONTEXT.search(src))
