"""Suppression comments and the MCJ900 "unused suppression" meta rule.

    x = f()  # mcjax: ignore[MCJ101]            one code
    x = f()  # mcjax: ignore[MCJ101, MCJ201]    several codes
    x = f()  # mcjax: ignore                    every code
    x = f()  # noqa: MCJ101                     ruff/flake8 spelling (only MCJ codes count;
                                                a bare `# noqa` is left to the other linters)

A comment covers the whole *logical line* it ends: every physical line of a multi-line
statement, or the header of a compound statement (`if (...):`, `for ... in (...):`). A finding is
suppressed when its first line lies in a covered logical line. The logical lines come from the
same tokenize pass that finds the comments, which runs only on files whose text contains a
suppression at all (a regex over the raw text decides), so clean files cost nothing.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable
from dataclasses import dataclass

from mcjax_lint.model import Edit, Finding, Fix, Severity


@dataclass(frozen=True)
class MetaRuleInfo:
    code: str
    name: str
    severity: Severity
    summary: str
    fixable: bool
    family: str


UNUSED_SUPPRESSION = MetaRuleInfo(
    code="MCJ900",
    name="unused-suppression",
    severity=Severity.WARNING,
    summary="A `# mcjax: ignore` or `# noqa` comment suppresses nothing.",
    fixable=True,
    family="meta",
)

_QUICK = re.compile(r"#[^\n]*?(mcjax\s*:\s*ignore|noqa\s*:[^\n]*MCJ)", re.I)
# A directive starts a comment, or follows other comment text after whitespace (a note, then
# the directive); a directive quoted inside prose (in backticks) is not one.
_MCJAX = re.compile(r"(?:^|(?<=\s))#\s*mcjax\s*:\s*ignore(?:\s*\[(?P<codes>[^\]]*)\])?", re.I)
_NOQA = re.compile(r"(?:^|(?<=\s))#\s*noqa\s*:\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*)", re.I)
_CODE = re.compile(r"^MCJ\d{3}$")


@dataclass(frozen=True)
class Suppression:
    line: int  # line of the comment
    column: int  # column where the comment starts
    end_column: int
    codes: tuple[str, ...] | None  # None: every code (bare `# mcjax: ignore`)
    start_line: int  # the logical line the comment covers
    end_line: int
    kind: str  # "mcjax" or "noqa"
    text: str  # the whole comment, for the fix that removes unused codes
    lead: int  # where the whitespace before the comment starts (0: a comment-only line)

    def covers(self, line: int) -> bool:
        return self.start_line <= line <= self.end_line

    def to_list(self) -> list:
        return [self.line, self.column, self.end_column, None if self.codes is None else list(self.codes),
                self.start_line, self.end_line, self.kind, self.text, self.lead]

    @classmethod
    def from_list(cls, v: list) -> "Suppression":
        codes = None if v[3] is None else tuple(v[3])
        return cls(v[0], v[1], v[2], codes, v[4], v[5], v[6], v[7], v[8])


def _parse_comment(text: str) -> tuple[str, tuple[str, ...] | None] | None:
    m = _MCJAX.search(text)
    if m:
        if m.group("codes") is None:
            return "mcjax", None
        codes = tuple(c.strip().upper() for c in m.group("codes").split(",") if c.strip())
        return "mcjax", codes
    m = _NOQA.search(text)
    if m:
        codes = tuple(c.upper() for c in re.split(r"[\s,]+", m.group("codes")) if c)
        mine = tuple(c for c in codes if c.startswith("MCJ"))
        if mine:
            return "noqa", mine
    return None


def scan(source: str) -> list[Suppression]:
    """Every suppression comment in `source`, with the logical line it covers."""
    if not _QUICK.search(source):
        return []
    found: list[Suppression] = []
    pending: list[tuple[int, int, int, str, tuple[str, ...] | None, str]] = []
    logical_start: int | None = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(source).readline):
            ttype = tok.type
            if ttype == tokenize.COMMENT:
                parsed = _parse_comment(tok.string)
                if parsed:
                    kind, codes = parsed
                    lead = len(tok.line[: tok.start[1]].rstrip())
                    entry = (tok.start[0], tok.start[1], tok.end[1], kind, codes, tok.string, lead)
                    if logical_start is None:  # a comment on a line of its own covers that line
                        found.append(_make(entry, tok.start[0], tok.start[0]))
                    else:
                        pending.append(entry)
            elif ttype in (tokenize.NEWLINE, tokenize.ENDMARKER):
                if logical_start is not None:
                    end = tok.start[0]
                    found.extend(_make(e, logical_start, end) for e in pending)
                pending.clear()
                logical_start = None
            elif ttype in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT, tokenize.ENCODING):
                continue
            elif logical_start is None:
                logical_start = tok.start[0]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass  # the analysis reports the file as unparsable; keep what was found
    for e in pending:  # unterminated last line
        found.append(_make(e, logical_start or e[0], e[0]))
    found.sort(key=lambda s: (s.line, s.column))
    return found


def _make(entry: tuple, start: int, end: int) -> Suppression:
    line, col, end_col, kind, codes, text, lead = entry
    return Suppression(line, col, end_col, codes, min(start, line), max(end, line), kind, text, lead)


def apply(
    findings: Iterable[Finding],
    suppressions: list[Suppression],
    path: str,
    report_unused: "callable",
) -> list[Finding]:
    """Drop suppressed findings; add MCJ900 for suppressions (or codes) that matched nothing.

    `report_unused(code)` says whether an unused suppression of `code` should be reported
    (only when that code is selected for this file, as ruff does for RUF100)."""
    findings = list(findings)
    if not suppressions:
        return findings
    used: list[set[str]] = [set() for _ in suppressions]
    any_used = [False] * len(suppressions)
    kept: list[Finding] = []
    for f in findings:
        hit = False
        for i, s in enumerate(suppressions):
            if s.covers(f.line) and (s.codes is None or f.code in s.codes):
                hit = True
                any_used[i] = True
                used[i].add(f.code)
        if not hit:
            kept.append(f)
    if report_unused(UNUSED_SUPPRESSION.code):
        for i, s in enumerate(suppressions):
            if s.codes is None:
                if not any_used[i]:
                    kept.append(_unused(path, s, None))
                continue
            unknown = [c for c in s.codes if not _CODE.match(c)]
            unused = [c for c in s.codes if c not in used[i] and (c in unknown or report_unused(c))]
            if unused:
                kept.append(_unused(path, s, unused))
    return kept


def _unused(path: str, s: Suppression, unused: list[str] | None) -> Finding:
    if unused is None:
        msg = "Unused suppression: `# mcjax: ignore` suppresses no finding on this statement"
        remaining: tuple[str, ...] = ()
    else:
        names = ", ".join(unused)
        msg = f"Unused suppression of {names}: no such finding on this statement"
        remaining = tuple(c for c in (s.codes or ()) if c not in unused)
    return Finding(
        path=path,
        line=s.line,
        column=s.column,
        end_line=s.line,
        end_column=s.end_column,
        code=UNUSED_SUPPRESSION.code,
        severity=UNUSED_SUPPRESSION.severity,
        message=msg,
        fix=_fix(s, remaining),
    )


def _fix(s: Suppression, remaining: tuple[str, ...]) -> Fix | None:
    """Remove the unused codes (or the whole directive) from the comment; keep other text."""
    text = s.text
    if s.kind == "mcjax":
        m = _MCJAX.search(text)
        assert m is not None
        directive = f"# mcjax: ignore[{', '.join(remaining)}]" if remaining else ""
    else:
        m = _NOQA.search(text)
        assert m is not None
        codes = [c for c in re.split(r"[\s,]+", m.group("codes")) if c]
        keep = [c for c in codes if not c.upper().startswith("MCJ") or c.upper() in remaining]
        directive = f"# noqa: {','.join(keep)}" if keep else ""
    new = (text[: m.start()].rstrip() + "  " + directive).strip() if directive else text[: m.start()].rstrip()
    rest = text[m.end():].strip()
    if rest:
        new = f"{new}  {rest}".strip() if new else rest
    if new.strip("# "):
        if not new.startswith("#"):
            new = "# " + new
        what = "codes" if directive else "directive"
        edit = Edit(s.line, s.column, s.line, s.end_column, new)
        return Fix(f"Remove the unused {what} from the suppression comment", (edit,))
    if s.lead == 0:  # the comment is the whole line: drop the line
        edit = Edit(s.line, 0, s.line + 1, 0, "")
    else:  # drop the comment and the spaces before it
        edit = Edit(s.line, s.lead, s.line, s.end_column, "")
    return Fix("Remove the unused suppression comment", (edit,))
