"""MCJ201 set-iteration-order."""

from __future__ import annotations

from mcjax_lint.analysis import kinds
from mcjax_lint.rules.origin import OriginRule


class SetIterationOrder(OriginRule):
    CODE = "MCJ201"
    NAME = "set-iteration-order"
    SEVERITY = "error"
    SUMMARY = "The iteration order of a set reaches collective work or a value that must agree across processes."
    FIXABLE = True
    FAMILY = "nondeterministic order"
    FACET = kinds.ORDER
    SOURCE_KINDS = frozenset({kinds.SET_ORDER})
    HEAD = ("the iteration order of a set differs between processes (strings and bytes hash with a "
            "per-process salt, other objects by their address)")
