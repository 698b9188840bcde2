"""MCJ201 set-iteration-order."""

from __future__ import annotations

from mcjax_lint.rules.origin import OriginRule


class SetIterationOrder(OriginRule):
    CODE = "MCJ201"
    KIND = "order"
    HEAD = "the iteration order of a set differs between processes (string hashing is randomized per process)"
