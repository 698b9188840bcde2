"""Which files to lint: discovery under directories, exclusion patterns, the project root.

Exclusion follows ruff: a pattern without a `/` matches any path component by name (so `build`
skips every directory called build), a pattern with a `/` is a glob matched against the path
relative to the project root. Files named explicitly on the command line are linted even when
excluded (as ruff does without `--force-exclude`), unless `force_exclude` is set, which is what
pre-commit wants: it passes every changed file.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess
from collections.abc import Iterable, Sequence
from pathlib import Path

DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".bzr",
    ".direnv",
    ".eggs",
    ".git",
    ".git-rewrite",
    ".hg",
    ".mypy_cache",
    ".nox",
    ".pants.d",
    ".pytype",
    ".ruff_cache",
    ".mcjax_cache",
    ".svn",
    ".tox",
    ".venv",
    "__pypackages__",
    "__pycache__",
    "_build",
    "buck-out",
    "build",
    "dist",
    "node_modules",
    "site-packages",
    "venv",
)

# A directory holding one of these is the root of a project (where the cache lives and whose
# files together form the cross-module index).
PROJECT_MARKERS: tuple[str, ...] = ("pyproject.toml", ".git")


class Excluder:
    """Decides whether a path is excluded, relative to a root."""

    def __init__(self, root: Path, patterns: Iterable[str]) -> None:
        self.root = root
        self._names: list[str] = []  # match any single path component
        self._paths: list[str] = []  # match the root-relative path (posix)
        for p in patterns:
            p = p.strip()
            if not p:
                continue
            p = p.rstrip("/")
            if p.startswith("./"):
                p = p[2:]
            (self._paths if "/" in p else self._names).append(p)

    def _rel(self, path: Path) -> str | None:
        for candidate in (path, path.resolve()):
            try:
                return candidate.relative_to(self.root).as_posix()
            except ValueError:
                pass
        return None

    def excluded(self, path: Path, base: Path | None = None) -> bool:
        """Name patterns match the components below `base` (default: the root), so a project
        that itself lives under a directory called `build` is not excluded whole."""
        rel = self._rel(path)
        try:
            parts = path.relative_to(base or self.root).parts
        except ValueError:
            parts = (path.name,)
        for name in self._names:
            if any(fnmatch.fnmatchcase(part, name) for part in parts):
                return True
        if rel is not None:
            for pat in self._paths:
                # A directory pattern also covers everything beneath it.
                if fnmatch.fnmatchcase(rel, pat) or fnmatch.fnmatchcase(rel, pat + "/*"):
                    return True
        return False


def find_project_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` holding a project marker, or None."""
    start = start.resolve()
    if start.is_file() or not start.exists():
        start = start.parent
    for d in (start, *start.parents):
        if any((d / m).exists() for m in PROJECT_MARKERS):
            return d
    return None


def git_visible_python_files(top: Path) -> list[Path] | None:
    """Python files under `top` that git does not ignore (tracked or untracked), or None when
    `top` is not inside a git work tree (or git is unavailable). Asking git honours every
    .gitignore, .git/info/exclude and the global excludes file exactly as git does."""
    try:
        out = subprocess.run(
            ["git", "-C", str(top), "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "*.py"],
            capture_output=True, timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    files = []
    for rel in out.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if rel:
            p = top / rel
            if p.is_file() or p.is_symlink():  # the index may list files deleted from the tree
                files.append(p)
    return files


def discover(
    paths: Sequence[Path],
    excluder: Excluder,
    *,
    force_exclude: bool = False,
    missing: list[Path] | None = None,
    respect_gitignore: bool = True,
) -> list[Path]:
    """Python files under `paths` (resolved, sorted, without duplicates).

    Directories are searched for `*.py` files that are not excluded and, with
    `respect_gitignore` (the default, as in ruff), not ignored by git. Paths that do not exist
    are appended to `missing` (the caller reports them)."""
    found: set[Path] = set()
    for given in paths:
        p = given.resolve()
        if p.is_dir():
            if force_exclude and p != excluder.root and excluder.excluded(p):
                continue
            listed = git_visible_python_files(p) if respect_gitignore else None
            if listed is None:
                found.update(_walk(p, excluder))
            else:
                found.update(f for f in listed if not excluder.excluded(f, p))
        elif p.exists() or p.is_symlink():
            if force_exclude and excluder.excluded(p):
                continue
            found.add(p)  # named explicitly: linted whatever its suffix
        elif missing is not None:
            missing.append(given)
    return sorted(found)


def _walk(top: Path, excluder: Excluder) -> Iterable[Path]:
    for dirpath, dirnames, filenames in os.walk(top):
        d = Path(dirpath)
        # Prune excluded directories in place so os.walk never enters them.
        dirnames[:] = sorted(n for n in dirnames if not excluder.excluded(d / n, top))
        for name in sorted(filenames):
            if name.endswith(".py"):
                f = d / name
                if not excluder.excluded(f, top):
                    yield f


def display_path(path: Path, cwd: Path | None = None) -> str:
    """How a path is shown: relative to the working directory when below it, else absolute."""
    cwd = cwd or Path.cwd()
    try:
        return path.relative_to(cwd).as_posix()
    except ValueError:
        try:
            return path.relative_to(cwd.resolve()).as_posix()
        except ValueError:
            return path.as_posix()
