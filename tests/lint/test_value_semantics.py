"""Rules of Python in `analysis/semantics.py` that decide precision (issue 19): set order by
element type, and which exceptions a handler can catch. Each is asked through both readers."""

from __future__ import annotations

import ast

import libcst as cst
import pytest

from mcjax_lint.analysis import read_ast, read_cst, semantics

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
