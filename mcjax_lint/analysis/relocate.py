"""Line moves without a rebuild: summaries compared with their positions left out, and a cached
project index moved to the current lines of the files whose definitions only moved.

A summary (its `to_dict()` form) holds positions in a few known places: `"l"` of a call,
`"line"` of a function or class, the second element of each direct source (`pd`, `pdc`,
`order`, `hash`: `[desc, line(, code)]`) and of `collective` / `device_access` /
`import_device_access` (`[desc, line]`), and `initialize_line` (whose being non-zero is a fact,
kept). `position_free()` gives the summary with those zeroed, and the positions in walk order:
two summaries with the same position-free form give the index the same facts except for the
lines the facts quote, which `line_map()` pairs up.

The index records which file each quoted origin (`utils.py:12`) came from, and which files'
sources a cap on the number of sources compared (`values.CAP_LOG`): a cap keeps the sources
with the smallest lines, so after a move it could keep other ones, and the index must then be
rebuilt. `relocate_index()` rewrites the quoted lines of moved files in the index's facts, or
says it cannot (an origin it cannot attribute to one file, a capped file, a line that moved to
two places): the caller rebuilds then.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from typing import Any

_SOURCE_KEYS = ("pd", "pdc", "order", "hash")
_PAIR_KEYS = ("collective", "device_access", "import_device_access")


def position_free(summary: dict) -> tuple[Any, list[int]]:
    """(copy of `summary` with its positions zeroed, the positions in walk order). Objects shared
    inside the summary stay shared in the copy (walked once), so the copy pickles as compactly."""
    positions: list[int] = []
    memo: dict[int, Any] = {}

    def walk(x: Any) -> Any:
        if isinstance(x, dict):
            hit = memo.get(id(x))
            if hit is not None:
                return hit
            out: dict = {}
            memo[id(x)] = out
            for k, v in x.items():
                if (k == "l" or k == "line") and type(v) is int:
                    positions.append(v)
                    out[k] = 0
                elif k in _SOURCE_KEYS and isinstance(v, list) and v and isinstance(v[0], list):
                    srcs = []
                    for s in v:
                        if len(s) >= 2 and type(s[1]) is int:
                            positions.append(s[1])
                            s = [s[0], 0, *s[2:]]
                        srcs.append(s)
                    out[k] = srcs
                elif k in _PAIR_KEYS and isinstance(v, list) and len(v) == 2 and type(v[1]) is int:
                    positions.append(v[1])
                    out[k] = [v[0], 0]
                elif k == "initialize_line" and type(v) is int:
                    positions.append(v)
                    out[k] = 1 if v else 0
                else:
                    out[k] = walk(v)
            return out
        if isinstance(x, list):
            hit = memo.get(id(x))
            if hit is not None:
                return hit
            out_l: list = []
            memo[id(x)] = out_l
            out_l.extend(walk(v) for v in x)
            return out_l
        return x

    return walk(summary), positions


def line_map(old: dict, new: dict) -> dict[int, int] | None:
    """Old line -> new line for two summaries of one file that differ only in positions; None when
    they differ otherwise or a line went to two places (an edit that split a line)."""
    a, pa = position_free(old)
    b, pb = position_free(new)
    if a != b or len(pa) != len(pb):
        return None
    out: dict[int, int] = {}
    for x, y in zip(pa, pb):
        if out.setdefault(x, y) != y:
            return None
    return out


class Unrelocatable(Exception):
    """The cached index cannot be moved to the current lines: rebuild it."""


_ANCHOR = re.compile(r"\(([^()\s:]+):(\d+)\)")


def relocate_index(index: Any, moves: dict[str, dict[int, int]], summaries: dict[str, Any]) -> None:
    """Move the lines the index quotes for files whose definitions moved.

    `moves`: path -> (old line -> new line); `summaries`: path -> the file's current
    `ModuleSummary` (the index's own stubs of it are refreshed from it). Raises `Unrelocatable`
    (the index is then left half-moved: the caller must drop it)."""
    origins: dict[str, dict[int, Any]] = index._origin_paths
    capped = index._capped_paths
    by_short: dict[str, tuple[str, dict[int, int]]] = {}
    for path, m in moves.items():
        if path in capped:
            raise Unrelocatable(f"{path}: a capped source set compared its sources")
        short = os.path.basename(path)
        if short in by_short:
            raise Unrelocatable(f"two moved files named {short}")
        by_short[short] = (path, m)

    def new_line(short: str, line: int) -> int | None:
        """The current line of origin `short:line`, None if it is not a moved file's."""
        hit = by_short.get(short)
        if hit is None:
            return None
        path, m = hit
        owner = origins.get(short, {}).get(line)
        if owner is None:
            raise Unrelocatable(f"origin {short}:{line} not recorded")
        if owner != path:
            if isinstance(owner, tuple) and path in owner:
                raise Unrelocatable(f"origin {short}:{line} is ambiguous")
            return None  # another file of the same name, not moved
        nl = m.get(line)
        if nl is None:
            raise Unrelocatable(f"origin {short}:{line} has no position in the summary")
        return nl

    def fix_text(s: str | None) -> str | None:
        if not s or "(" not in s:
            return s

        def sub(mo: re.Match) -> str:
            nl = new_line(mo.group(1), int(mo.group(2)))
            return mo.group(0) if nl is None else f"({mo.group(1)}:{nl})"

        return _ANCHOR.sub(sub, s)

    def fix_srcs(srcs: frozenset) -> frozenset:
        if not srcs:
            return srcs
        out = None
        for s in srcs:
            if s.origin:
                short, _, ln = s.origin.rpartition(":")
                if short in by_short:
                    nl = new_line(short, int(ln))
                    if nl is not None and nl != s.line:
                        if out is None:
                            out = set(srcs)
                        out.discard(s)
                        out.add(replace(s, line=nl, origin=f"{short}:{nl}"))
        return srcs if out is None else frozenset(out)

    def fix_val(v: Any) -> Any:
        pd, pdc, order, hsh = fix_srcs(v.pd), fix_srcs(v.pdc), fix_srcs(v.order), fix_srcs(v.hash)
        shape, tree = fix_srcs(v.shape), fix_srcs(v.tree)
        callable_ = fix_text(v.callable)
        items = tuple(fix_val(x) for x in v.items) if v.items else v.items
        if (pd is v.pd and pdc is v.pdc and order is v.order and hsh is v.hash and shape is v.shape
                and tree is v.tree and callable_ == v.callable and (items is v.items or items == v.items)):
            return v
        return replace(v, pd=pd, pdc=pdc, order=order, hash=hsh, shape=shape, tree=tree, callable=callable_, items=items)

    for table in (index.returns, index._attr_cache, index._global_cache):
        for k, v in table.items():
            nv = fix_val(v)
            if nv is not v:
                table[k] = nv
    for table in (index.collective, index.device_access):
        for k, s in table.items():
            ns = fix_text(s)
            if ns != s:
                table[k] = ns

    # Later relocations read the origins at their new lines.
    for short, (path, m) in by_short.items():
        table = origins.get(short, {})
        moved = {}
        for line, owner in list(table.items()):
            if owner == path:
                del table[line]
                moved[m.get(line, line)] = path
            elif isinstance(owner, tuple) and path in owner:
                raise Unrelocatable(f"origin {short}:{line} is ambiguous")
        for line, path_ in moved.items():
            prev = table.get(line)
            table[line] = path_ if prev is None else tuple(sorted({*(prev if isinstance(prev, tuple) else (prev,)), path_}))

    # The per-file stubs (lines of definitions, the MCJ401 facts) come from the current summaries.
    for path, s in summaries.items():
        for q, f in s.functions.items():
            stub = index.functions.get(q)
            if stub is not None:
                stub.line = f.line
        for q, c in s.classes.items():
            stub = index.classes.get(q)
            if stub is not None:
                stub.line = c.line
        stub = index.modules.get(s.module)
        if stub is not None:
            stub.initialize_line = s.initialize_line
            stub.import_device_access = s.import_device_access
    index._module_device_access = index._import_device_access()
