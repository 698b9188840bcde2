"""What every output format gets: the findings, file errors, sources and rule metadata."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcjax_lint.model import FileError, Finding


@dataclass
class OutputContext:
    findings: Sequence[Finding]
    file_errors: Sequence[FileError] = ()
    # Lines of a file by displayed path, loaded on demand (for source excerpts).
    read_lines: Callable[[str], list[str] | None] = lambda path: None
    # code -> rule metadata (name, severity, summary, fixable, family).
    rules: Mapping[str, object] = field(default_factory=dict)
    show_source: bool = True
    project_root: Path | None = None
    # Absolute path of each displayed path (SARIF needs URIs relative to the project root).
    absolute: Callable[[str], Path] = lambda p: Path(p).resolve()
    color: bool = False
    fixable_hint: bool = True
