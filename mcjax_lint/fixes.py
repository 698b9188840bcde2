"""Apply the safe fixes findings carry (`--fix`), or show them as a unified diff (`--diff`).

Only fixes the rules mark as safe exist (e.g. `sorted(...)` around a set or a directory listing;
removing an unused suppression). Fixes whose edits overlap an already accepted fix wait for the
next round; the caller re-lints and repeats until nothing more applies. A fixed source that no
longer parses is never written: the file is left as it was and reported.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterable
from dataclasses import dataclass

from mcjax_lint.model import Edit, Finding, Fix


@dataclass
class FixResult:
    source: str
    applied: list[Finding]  # findings whose fix was applied
    error: str | None = None  # why nothing was applied


def _line_offsets(source: str) -> list[int]:
    offsets = [0]
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _offset(offsets: list[int], source: str, line: int, column: int) -> int:
    if line < 1:
        return 0
    if line > len(offsets) - 1:
        return len(source)  # past the last line: the end of the text
    return min(offsets[line - 1] + column, offsets[line], len(source))


def apply_fixes(source: str, findings: Iterable[Finding]) -> FixResult:
    """One round: apply every non-overlapping fix, in source order."""
    offsets = _line_offsets(source)
    candidates: list[tuple[list[tuple[int, int, str]], Finding]] = []
    for f in findings:
        if f.fix is None or not f.fix.edits:
            continue
        spans = sorted((_offset(offsets, source, e.line, e.column), _offset(offsets, source, e.end_line, e.end_column),
                        e.replacement) for e in f.fix.edits)
        if any(a > b for a, b, _ in spans):
            continue
        candidates.append((spans, f))
    candidates.sort(key=lambda c: (c[0][0][0], c[0][-1][1]))
    accepted: list[tuple[int, int, str]] = []
    applied: list[Finding] = []
    seen_fixes: set[Fix] = set()
    for spans, f in candidates:
        if f.fix in seen_fixes:  # two findings sharing one fix: apply it once, count both
            applied.append(f)
            continue
        if any(_overlaps(s, a) for s in spans for a in accepted):
            continue
        accepted.extend(spans)
        seen_fixes.add(f.fix)
        applied.append(f)
    if not accepted:
        return FixResult(source, [])
    out = source
    for start, end, text in sorted(accepted, reverse=True):
        out = out[:start] + text + out[end:]
    try:
        ast.parse(out)
    except SyntaxError as e:
        from mcjax_lint.analysis.summary import _parse_newer_grammar

        if _parse_newer_grammar(out) is None:  # (valid Python of a newer grammar than the host's)
            return FixResult(source, [], error=f"fixes would produce invalid Python ({e.msg}); not applied")
    except ValueError as e:
        return FixResult(source, [], error=f"fixes would produce invalid Python ({e.msg if isinstance(e, SyntaxError) else e}); not applied")
    return FixResult(out, applied)


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    # Two insertions at the same point would be ambiguous too.
    return a[0] < b[1] and b[0] < a[1] or (a[0] == a[1] == b[0] == b[1])


def unified_diff(path: str, before: str, after: str) -> str:
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            fromfile=f"a/{path}",
            tofile=f"b/{path}",
        )
    )


__all__ = ["Edit", "Fix", "FixResult", "apply_fixes", "unified_diff"]
