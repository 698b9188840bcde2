"""MCJ202 filesystem-order."""

from __future__ import annotations

from mcjax_lint.analysis import kinds
from mcjax_lint.rules.origin import OriginRule


class FilesystemOrder(OriginRule):
    CODE = "MCJ202"
    NAME = "filesystem-order"
    SEVERITY = "error"
    PRECISION = "medium"  # its errors on unseen code were mostly wrong: benchmarks/rule_precision.py
    SUMMARY = "The order of a directory listing or glob reaches collective work or a per-process partition."
    FIXABLE = True
    FAMILY = "nondeterministic order"
    FACET = kinds.ORDER
    SOURCE_KINDS = frozenset({kinds.LISTING_ORDER})
    HEAD = "directory listings come back in filesystem order, which can differ between processes and hosts"
