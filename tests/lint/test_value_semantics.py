"""Rules of Python in `analysis/semantics.py` that decide precision (issue 19): set order by
element type, and which exceptions a handler can catch. Each is asked through both readers."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from mcjax_lint.analysis import kinds, read_ast, read_cst, semantics

READERS = {
    "ast": lambda src: (ast.parse(src, mode="eval").body, read_ast.read),
    "cst": lambda src: (cst.parse_expression(src), read_cst.read),
}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("src,order", [
    ("{1, 2, 3}", False),
    ("{(r, c) for r, c in coords if r < c}", semantics.GUESS),  # r, c of unknown type
    ("{(int(r), int(c)) for r, c in coords}", False),
    ("{True, False, None}", False),
    ("{frozenset({0, 1}), frozenset({2})}", False),
    ("{x < 3 for x in xs}", False),
    ('{"a", "b"}', semantics.SALTED),
    ('{f"stage-{i}" for i in ids}', semantics.SALTED),
    ('{n.split("/")[0] for n in names}', semantics.SALTED),
    ('{n for n in names if n.startswith("head/")}', semantics.SALTED),
    ("{b'x', 1}", semantics.SALTED),
    ("{layer.name for layer in layers}", semantics.GUESS),
    ("{obj for obj in objs}", semantics.GUESS),
])
def test_set_order_follows_element_hashing(reader, src, order):
    node, read = READERS[reader](src)
    assert semantics.set_order(node, read, lambda name: False) == order


def test_a_guess_never_beats_a_certain_order():
    assert semantics.stronger_order(semantics.GUESS, semantics.SALTED) is semantics.SALTED
    assert semantics.stronger_order(False, semantics.GUESS) == semantics.GUESS
    assert semantics.stronger_order(False, False) is False


PROJECT = {"pkg.VocabMismatch": ["pkg.VocabMismatch", "Exception"],
           "pkg.BadBatch": ["pkg.BadBatch", "ValueError"],
           "pkg.TfFailure": ["pkg.TfFailure", "tensorflow.errors.OpError"]}


def ancestry(q):
    return PROJECT.get(q)


@pytest.mark.parametrize("caught,raised,lib,expected", [
    (None, "ValueError", False, True),  # bare except
    (["Exception"], None, True, True),
    (["KeyError"], "ValueError", False, False),
    (["LookupError"], "KeyError", False, True),
    (["pkg.VocabMismatch"], None, True, False),  # a library call cannot raise the project's class
    (["pkg.VocabMismatch"], None, False, True),  # a project function might
    (["ValueError"], "pkg.BadBatch", False, True),  # through the project class's bases
    (["KeyError"], "pkg.BadBatch", False, False),
    (["pkg.VocabMismatch"], "pkg.BadBatch", False, False),
    (["OSError"], "pkg.TfFailure", False, True),  # a library base: unknown, may derive from it
    (["KeyError", None], "ValueError", False, True),  # an unresolved type: may catch
    (["OSError"], "tensorflow.errors.OpError", False, True),
    (["pkg.VocabMismatch"], "tensorflow.errors.OpError", False, False),
])
def test_handler_catches_only_what_it_can(caught, raised, lib, expected):
    assert semantics.handler_may_catch(caught, raised, lib, ancestry) is expected


@pytest.mark.parametrize("name,raised", [
    ("open", semantics.Raised("OSError")),
    ("os.makedirs", semantics.Raised("OSError")),
    ("numpy.load", semantics.Raised("OSError", only=False)),  # may also fail on what it reads
    ("ckpt.save", semantics.Raised("OSError", only=False)),
    ("json.dumps", None),
    (None, None),
])
def test_a_file_call_fails_with_some_os_error(name, raised):
    assert semantics.raised_by_call(name, False) == raised
    assert semantics.raised_by_call(name, True) == semantics.Raised("StopIteration")


@pytest.mark.parametrize("caught,expected", [
    (None, True),  # bare except
    (["Exception"], True),
    (["OSError"], True),
    (["IOError"], True),  # an alias of OSError
    (["FileNotFoundError"], True),  # the failure may be that subclass: it may be caught
    (["ValueError", "PermissionError"], True),
    (["ValueError"], False),
    (["KeyError", None], False),  # an unresolved type: nothing says it catches it
    (["tensorflow.errors.NotFoundError"], False),  # a library class of unknown bases
])
def test_an_io_failure_is_caught_by_any_class_of_its_family(caught, expected):
    assert semantics.handler_may_catch_family(caught, semantics.IO_FAILURE) is expected
    # ... but surely only by a class that holds the whole family.
    surely = caught is None or bool({"Exception", "OSError", "IOError"} & set(caught))
    assert semantics.handler_surely_catches(caught, semantics.IO_FAILURE, ancestry) is surely


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("src,expected", [
    ("len(s) == 1", ("s", True)),
    ("1 >= len(s)", ("s", True)),
    ("len(s) < 2", ("s", True)),
    ("len(s) != 1", ("s", False)),
    ("2 <= len(s)", ("s", False)),
    ("len(s) == 2", (None, False)),
    ("len(s) is 1", (None, False)),
    ("len(s.x) == 1", (None, False)),
    ("len(*s) == 1", (None, False)),
    ("len(s, k=1) == 1", (None, False)),
    ("len(s) == True", (None, False)),  # a bool is no count
    ("0 < len(s) < 2", (None, False)),
])
def test_a_test_on_a_length_says_where_a_set_has_one_element(reader, src, expected):
    node, read = READERS[reader](src)
    assert semantics.singleton_test(node, read) == expected


@pytest.mark.parametrize("call,kind", [
    ("jax.process_index", kinds.PROCESS_ID),
    ("socket.gethostname", kinds.HOST_ID),
    ("time.perf_counter", kinds.CLOCK),
    ("datetime.datetime.now", kinds.CLOCK),
    ("numpy.random.default_rng", kinds.RANDOM),
    ("secrets.token_hex", kinds.RANDOM),
    ("grain.python.ShardByJaxProcess", kinds.LOCAL_DATA),
])
def test_a_process_dependent_call_says_what_it_is(call, kind):
    assert semantics.process_dependent_kind(call) == kind


def test_a_guard_keeps_the_kind_of_the_source_it_guards():
    label = kinds.guarded("pkg.is_host", "host", kinds.PROCESS_ID)
    assert kinds.guard_of(label, "pkg.is_host") == "host"
    assert kinds.guard_of(label, "pkg.other") is None
    assert kinds.unguarded(label) == kinds.PROCESS_ID
    assert kinds.unguarded(kinds.CLOCK) == kinds.CLOCK


@pytest.mark.parametrize("src,leaves", [
    ("if c:\n    x = 1\n    return x\n", True),
    ("if c:\n    x = 1; raise ValueError\n", True),
    ("for i in r:\n    if i:\n        continue\n    break\n", True),
    ("if c:\n    return\n    x = 1\n", False),  # (the last statement decides, as written)
    ("if c:\n    x = 1\n", False),
])
def test_a_block_leaves_when_its_last_statement_jumps(src, leaves):
    """Both readers see the same last statement (the body of the first compound statement)."""
    from mcjax_lint.analysis.read_ast import last_statement as last_ast
    from mcjax_lint.analysis.read_cst import last_statement as last_cst
    assert semantics.always_leaves(ast.parse(src).body[0].body, last_ast) is leaves
    assert semantics.always_leaves(cst.parse_module(src).body[0].body, last_cst) is leaves


@pytest.mark.parametrize("src,kind", [
    ("rows[i]", "element"),
    ("rows[i, j]", "element"),
    ("rows[i:j]", "slice"),
    ("rows[:, 0]", "slice"),  # a slice among the keys: a part along that axis, as long as rows'
    ("rows[i, a:b]", "slice"),
])
def test_a_slice_among_the_keys_gives_a_part_not_an_element(src, kind):
    """`semantics.StatementRules.ev_Subscript`, through the summary pass: an element's
    per-process taint is its content's (via the parameter: "elem"), a part keeps the whole's."""
    from mcjax_lint.analysis.summary import summarize_source

    s = summarize_source(f"def f(rows, i, j, a, b):\n    return {src}\n", "m.py", "m")
    returns = s.functions["m.f"].returns
    assert "rows" in returns["params"]
    assert bool(returns.get("elem")) == (kind == "element")
