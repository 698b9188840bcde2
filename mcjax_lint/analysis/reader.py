"""What the two readers (`read_ast.py`, `read_cst.py`) share, written once: the dispatch of a
node to its reading, and the parts of a statement both trees name alike."""

from __future__ import annotations

from collections.abc import Callable


def dispatch(table: dict[type, Callable[[object], tuple]]) -> Callable[[object], tuple]:
    """A reader over `table` (a node type -> its reading, `semantics`' normalized tuple); a node
    of any other type reads as ("other", its type's name lowercased)."""
    get = table.get

    def read(node) -> tuple:
        f = get(type(node))
        return f(node) if f is not None else ("other", type(node).__name__.lower())

    return read


# Readings of the node types whose fields both trees name alike (by class name: `ast.If` and
# `cst.If` both have `test`, `body`, `orelse`), merged into each reader's table.
SAME_FIELDS: dict[str, Callable[[object], tuple]] = {
    "Subscript": lambda n: ("subscript", n.value),
    "IfExp": lambda n: ("ifexp", n.body, n.orelse),
    "Lambda": lambda n: ("lambda", n.body),
    # statements (`semantics.order_free_accumulators`)
    "AnnAssign": lambda n: ("assign", [n.target], n.value) if n.value is not None else ("pass",),
    "If": lambda n: ("if", n.test, n.body, n.orelse),
    "Expr": lambda n: ("expr", n.value),
    "Break": lambda n: ("break",),
    "Continue": lambda n: ("continue",),
    "Pass": lambda n: ("pass",),
    "Return": lambda n: ("return",),
}


def same_fields(module) -> dict[type, Callable[[object], tuple]]:
    """`SAME_FIELDS` keyed by `module`'s node classes (`ast` or `libcst`)."""
    return {getattr(module, name): f for name, f in SAME_FIELDS.items()}


def read_assert(n) -> tuple:
    """An `assert` as `semantics.StatementRules.st_Assert` reads it: (test, message or None), the
    same fields in both trees."""
    return (n.test, n.msg)
