"""Public entry point for programs that call the linter in process (mcjax-guard's report causes).

`lint_paths(paths)` lints the given files the way `mcjax-lint` would in their project: the
project's `[tool.mcjax]` analysis settings, the functions earlier guarded runs saw doing
cross-process work (`mcjax_lint.observed`), and cross-module facts from the local modules the
files import (one level), so a helper such as `is_main()` defined next to the program is known.
It never imports jax or runtime_guard, and reads no cache: it is meant for a handful of files.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from mcjax_lint.model import FileError, Finding

__all__ = ["Finding", "FileError", "lint_paths"]

# Files larger than this are left out (a generated module on the stack must not eat the budget).
_MAX_BYTES = 1_000_000
# Imported local modules added for their cross-module facts, at most.
_MAX_IMPORTED = 64


def lint_paths(paths: Iterable[str | os.PathLike[str]], *, observed: bool = True,
               imports: bool = True) -> tuple[list[Finding], list[FileError]]:
    """Findings in `paths` (absolute paths are kept as given in `Finding.path`), and the files
    that could not be read or parsed. Configuration errors fall back to the defaults."""
    from dataclasses import replace

    from mcjax_lint.config import ConfigError, RuleFilter, load_config
    from mcjax_lint.engine import analyze_project
    from mcjax_lint.modnames import module_names

    targets = [os.path.abspath(p) for p in dict.fromkeys(os.fspath(p) for p in paths)]
    if not targets:
        return [], []
    start = Path(os.path.commonpath(targets))
    start = start if start.is_dir() else start.parent
    try:
        config = load_config(None, start)
    except ConfigError:
        from mcjax_lint.config import LintConfig

        config = LintConfig()
    settings = config.analysis
    if observed:
        from mcjax_lint import observed as obs

        settings = obs.with_observed(settings, obs.load_project(config.project_root, config.cache_dir))
    files: dict[str, str] = {}
    errors: list[FileError] = []
    for p in targets:
        text = _read(p, errors)
        if text is not None:
            files[p] = text
    context = _imported_files(files, config.project_root) if imports else {}
    names = module_names([*files, *context])
    findings, more = analyze_project({**files, **context}, settings, names)
    errors.extend(e for e in more if e.path in files)
    # Shown with the severities the command line gives them (configured, rule precision).
    shown = RuleFilter(config)
    return [replace(f, severity=shown.shown_severity(f)) for f in findings if f.path in files], errors


def _read(path: str, errors: list[FileError] | None = None) -> str | None:
    try:
        if os.path.getsize(path) > _MAX_BYTES:
            raise OSError(f"larger than {_MAX_BYTES} bytes")
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError) as e:
        if errors is not None:
            errors.append(FileError(path, f"could not read: {e}"))
        return None


def _imported_files(files: dict[str, str], root: Path | None) -> dict[str, str]:
    """The local modules `files` import, found next to them or under the project root."""
    import ast

    from mcjax_lint.analysis.summary import parse
    from mcjax_lint.errors import AnalysisError

    bases = {os.path.dirname(p) for p in files}
    if root is not None:
        bases |= {str(root), str(root / "src")}
    out: dict[str, str] = {}
    for path, text in files.items():
        try:
            tree = parse(text, path)  # (the summary pass's parser: a newer grammar than the host's too)
        except AnalysisError:
            continue
        for node in ast.walk(tree):
            here = bases
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                head = node.module or ""
                mods = [m for m in (head, *(f"{head}.{a.name}".lstrip(".") for a in node.names)) if m]
                if node.level:  # `from .utils import is_main`: next to the importing file
                    d = os.path.dirname(path)
                    for _ in range(node.level - 1):
                        d = os.path.dirname(d)
                    here = {d}
            else:
                continue
            for m in mods:
                for base in here:
                    stem = os.path.join(base, *m.split("."))
                    for cand in (stem + ".py", os.path.join(stem, "__init__.py")):
                        if cand in files or cand in out or not os.path.isfile(cand):
                            continue
                        text2 = _read(cand)
                        if text2 is not None and len(out) < _MAX_IMPORTED:
                            out[cand] = text2
    return out
