"""Errors raised by the analysis (the tooling turns them into `model.FileError`)."""

from __future__ import annotations


class AnalysisError(Exception):
    """A source file could not be analysed (syntax error, not text, ...).

    `line`/`column` locate the problem when known (1-based line, 0-based column).
    """

    def __init__(self, path: str, message: str, line: int | None = None, column: int | None = None):
        self.path = path
        self.message = message
        self.line = line
        self.column = column
        where = f"{path}:{line}:{column}" if line is not None else path
        super().__init__(f"{where}: {message}")
