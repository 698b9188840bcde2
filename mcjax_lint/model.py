"""Data types shared by the analysis, the rules and the output formats."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True)
class Edit:
    """Replace the source text between two (line, column) positions (1-based lines, 0-based columns)."""

    line: int
    column: int
    end_line: int
    end_column: int
    replacement: str


@dataclass(frozen=True)
class Fix:
    description: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Step:
    """One step of a finding's chain from source to sink: certain, or a guess and why."""

    line: int  # in the finding's file; 0 when the step is in another file (named in `text`)
    text: str
    certain: bool = True
    why: str = ""  # for a guess: what the engine assumed

    def to_dict(self) -> dict:
        return {"line": self.line or None, "text": self.text, "certain": self.certain, "why": self.why or None}


CERTAIN = "certain"
GUESS = "guess"


@dataclass(frozen=True)
class Finding:
    path: str
    line: int  # 1-based
    column: int  # 0-based, as ruff/libcst report it
    end_line: int
    end_column: int
    code: str
    severity: Severity
    message: str
    fix: Fix | None = None
    # Related locations (e.g. the source of divergence, the collective call): (label, line, column).
    related: tuple[tuple[str, int, int], ...] = field(default=())
    # How the finding was reached, source first, sink last (empty: a finding of syntax alone).
    chain: tuple[Step, ...] = field(default=())
    # The chains of other findings of this rule at this very position (other sinks the same
    # origin reaches, other ways to it), merged into this one: one location, one finding.
    also: tuple[tuple[Step, ...], ...] = field(default=())

    @property
    def confidence(self) -> str:
        """`certain` when every step of the chain is, else `guess`."""
        return CERTAIN if all(s.certain for s in self.chain) else GUESS

    def to_dict(self) -> dict:
        d = asdict(self)
        d["severity"] = self.severity.value
        d["related"] = [{"message": m, "line": ln, "column": c} for m, ln, c in self.related]
        d["chain"] = [s.to_dict() for s in self.chain]
        d["also"] = [[s.to_dict() for s in c] for c in self.also]
        d["confidence"] = self.confidence
        return d


@dataclass(frozen=True)
class FileError:
    """A file that could not be analysed (exit status 2), reported alongside the findings."""

    path: str
    message: str


def merge_same_location(findings: list[Finding]) -> list[Finding]:
    """One finding per rule and position (as ruff reports one diagnostic per rule and range):
    findings of one code on the same range become one, the strongest first (an error before a
    warning, a certain chain before a guess), with every related location and every other
    chain (`also`) kept. Distinct rules or ranges stay distinct findings."""
    groups: dict[tuple, list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.path, f.line, f.column, f.end_line, f.end_column, f.code), []).append(f)
    out = []
    for same in groups.values():
        if len(same) == 1:
            out.append(same[0])
            continue
        same = sorted(same, key=lambda f: (f.severity != Severity.ERROR, f.confidence != CERTAIN))
        first = same[0]
        related = list(dict.fromkeys(r for f in same for r in f.related))
        also = tuple(dict.fromkeys(c for f in same for c in (f.chain, *f.also) if c and c != first.chain))
        fix = first.fix or next((f.fix for f in same if f.fix is not None), None)
        out.append(Finding(first.path, first.line, first.column, first.end_line, first.end_column, first.code,
                           first.severity, first.message, fix, tuple(related), first.chain, also))
    return out
