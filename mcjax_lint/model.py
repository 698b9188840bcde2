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

    @property
    def confidence(self) -> str:
        """`certain` when every step of the chain is, else `guess`."""
        return CERTAIN if all(s.certain for s in self.chain) else GUESS

    def to_dict(self) -> dict:
        d = asdict(self)
        d["severity"] = self.severity.value
        d["related"] = [{"message": m, "line": ln, "column": c} for m, ln, c in self.related]
        d["chain"] = [s.to_dict() for s in self.chain]
        d["confidence"] = self.confidence
        return d


@dataclass(frozen=True)
class FileError:
    """A file that could not be analysed (exit status 2), reported alongside the findings."""

    path: str
    message: str
