"""MCJ203 string-hash."""

from __future__ import annotations

from mcjax_lint.rules.origin import OriginRule


class StringHash(OriginRule):
    CODE = "MCJ203"
    KIND = "hash"
    HEAD = "`hash()` of a str/bytes differs between processes (PYTHONHASHSEED is random per process)"
