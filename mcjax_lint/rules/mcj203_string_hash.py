"""MCJ203 string-hash."""

from __future__ import annotations

from mcjax_lint.analysis import kinds
from mcjax_lint.rules.origin import OriginRule


class StringHash(OriginRule):
    CODE = "MCJ203"
    NAME = "string-hash"
    SEVERITY = "error"
    SUMMARY = "`hash()` of a string (randomized per process by PYTHONHASHSEED) reaches collective work, a shape, a seed or a branch."
    FAMILY = "nondeterministic order"
    FACET = kinds.HASH
    SOURCE_KINDS = frozenset({kinds.STRING_HASH})
    HEAD = "`hash()` of a str/bytes differs between processes (PYTHONHASHSEED is random per process)"
