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

    def to_dict(self) -> dict:
        d = asdict(self)
        d["severity"] = self.severity.value
        d["related"] = [{"message": m, "line": ln, "column": c} for m, ln, c in self.related]
        return d


@dataclass(frozen=True)
class FileError:
    """A file that could not be analysed (exit status 2), reported alongside the findings."""

    path: str
    message: str
