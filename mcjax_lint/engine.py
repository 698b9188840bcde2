"""Public façade of the analysis: the five functions the tooling and the tests call.

Pipeline (the tooling's parallel/cached runner must give the same results as `analyze_project`):

1. `summarize(source, path, module)` — fast per-file pass on stdlib `ast`: imports, functions
   and what they return / whether they do collective work / whom they call, class attributes,
   module-level collective callables. Plain data (`ModuleSummary.to_dict()/from_dict()`), cached
   by the tooling per file content hash (together with `SUMMARY_VERSION`).
2. `build_index(summaries, settings)` — resolves names across modules and computes transitive
   facts over the call graph (fixpoint), plus the user's declarations.
3. `needs_full_analysis(summary, index)` — cheap prefilter: a file that cannot produce a
   finding is not parsed with libcst.
4. `analyze(source, path, module, index, settings)` — precise per-file pass on libcst: a shared
   taint/dataflow analysis, then one small visitor per rule.
5. `analyze_project(files, settings, modules)` — the serial reference pipeline.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcjax_lint.analysis.index import ProjectIndex
from mcjax_lint.analysis.summary import SUMMARY_VERSION, ModuleSummary
from mcjax_lint.errors import AnalysisError
from mcjax_lint.model import FileError, Finding
from mcjax_lint.modnames import module_names
from mcjax_lint.settings import AnalysisSettings

__all__ = [
    "SUMMARY_VERSION",
    "AnalysisError",
    "ModuleSummary",
    "ProjectIndex",
    "analyze",
    "analyze_project",
    "build_index",
    "library_summaries",
    "needs_full_analysis",
    "summarize",
]


def summarize(source: str, path: str, module: str) -> ModuleSummary:
    """Cross-file facts of one file (stdlib `ast`). Raises `AnalysisError` if it does not parse."""
    from mcjax_lint.analysis.summary import summarize_source

    return summarize_source(source, path, module)


def build_index(summaries: Iterable[ModuleSummary], settings: AnalysisSettings = AnalysisSettings(),
                libraries: Iterable[ModuleSummary] = (), solve: bool = True) -> ProjectIndex:
    """Resolve names across modules and compute transitive facts (call-graph fixpoint).
    `libraries`: summaries of installed library modules the project uses (`library_summaries`).
    `solve=False`: the tables only, the fixpoint left to `ProjectIndex.solve()`."""
    from mcjax_lint.analysis.index import build_project_index

    return build_project_index(list(summaries), settings, list(libraries), solve=solve)


def library_summaries(summaries: Iterable[ModuleSummary], settings: AnalysisSettings = AnalysisSettings(),
                      cache_dir=None) -> list[ModuleSummary]:
    """Summaries of the installed library modules these project summaries use, read from the
    libraries' source (see mcjax_lint/libraries.py); none when `settings.library_summaries` is off."""
    if not settings.library_summaries:
        return []
    from mcjax_lint import libraries

    return libraries.library_summaries(list(summaries), libraries.search_path(settings.library_paths), cache_dir).summaries


def parse(source: str, path: str) -> Any:
    """The precise pass's parse of one file (libcst), which needs no index: `analyze` takes it."""
    from mcjax_lint.analysis.driver import parse_source

    return parse_source(source, path)


def needs_full_analysis(summary: ModuleSummary, index: ProjectIndex) -> bool:
    """False when the file cannot produce any finding, so `analyze` may be skipped for it."""
    return index.needs_full_analysis(summary)


def analyze(
    source: str,
    path: str,
    module: str,
    index: ProjectIndex,
    settings: AnalysisSettings = AnalysisSettings(),
    parsed: Any = None,
) -> list[Finding]:
    """Findings of one file (libcst). Raises `AnalysisError` if the source does not parse.
    `parsed`: what `parse(source, path)` gave for this very source, if it was parsed before."""
    from mcjax_lint.analysis.driver import analyze_source

    return analyze_source(source, path, module, index, settings, parsed=parsed)


def analyze_project(
    files: dict[str, str],
    settings: AnalysisSettings = AnalysisSettings(),
    modules: dict[str, str] | None = None,
) -> tuple[list[Finding], list[FileError]]:
    """Serial reference pipeline over `{path: source}`; module names derived from paths if not given."""
    names = dict(modules or {})
    missing = [p for p in files if p not in names]
    if missing:
        names.update(module_names(missing) if not names else {p: n for p, n in module_names(files).items() if p in missing})
    summaries: dict[str, ModuleSummary] = {}
    errors: list[FileError] = []
    for path, source in files.items():
        try:
            summaries[path] = summarize(source, path, names[path])
        except AnalysisError as e:
            errors.append(FileError(path, str(e)))
    index = build_index(summaries.values(), settings, library_summaries(summaries.values(), settings))
    findings: list[Finding] = []
    for path, summary in summaries.items():
        if not needs_full_analysis(summary, index):
            continue
        try:
            findings.extend(analyze(files[path], path, names[path], index, settings))
        except AnalysisError as e:
            errors.append(FileError(path, str(e)))
    findings.sort(key=lambda f: (f.path, f.line, f.column, f.code))
    return findings, errors
