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
import re
import stat
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
        # One regex per kind (what fnmatchcase does pattern by pattern), and each distinct path
        # component tested once: discovery checks every file of the project on every run.
        self._name_re = re.compile("|".join(fnmatch.translate(n) for n in self._names)) if self._names else None
        # A directory pattern also covers everything beneath it.
        self._path_re = re.compile("|".join(f"{fnmatch.translate(p)}|{fnmatch.translate(p + '/*')}" for p in self._paths)) \
            if self._paths else None
        self._component: dict[str, bool] = {}
        self._root_str = str(root)

    def _below(self, path: Path, top: Path, top_str: str) -> str | None:
        """`path` relative to `top` as a posix string, or None (a string prefix test where that
        is what `relative_to` means: POSIX paths, a non-root top)."""
        if os.sep == "/" and len(top_str) > 1:
            s = str(path)
            if s.startswith(top_str) and s[len(top_str):len(top_str) + 1] == "/":
                return s[len(top_str) + 1:]
            if s == top_str:
                return ""
            if path.is_absolute() == top.is_absolute():
                return None
        try:
            return path.relative_to(top).as_posix()
        except ValueError:
            return None

    def _rel(self, path: Path) -> str | None:
        rel = self._below(path, self.root, self._root_str)
        if rel is None:
            resolved = resolve(path)
            if resolved is not None and resolved != path:
                rel = self._below(resolved, self.root, self._root_str)
        return rel

    def _name_excluded(self, part: str) -> bool:
        hit = self._component.get(part)
        if hit is None:
            hit = self._component[part] = self._name_re.match(part) is not None
        return hit

    def excluded(self, path: Path, base: Path | None = None) -> bool:
        """Name patterns match the components below `base` (default: the root), so a project
        that itself lives under a directory called `build` is not excluded whole."""
        if self._name_re is not None:
            below = self._below(path, base, str(base)) if base is not None else self._rel_to_root_only(path)
            parts = below.split("/") if below else ([path.name] if below is None else [])
            if any(self._name_excluded(part) for part in parts):
                return True
        if self._path_re is not None:
            rel = self._rel(path)
            if rel is not None and self._path_re.match(rel) is not None:
                return True
        return False

    def _rel_to_root_only(self, path: Path) -> str | None:
        return self._below(path, self.root, self._root_str)


def resolve(path: Path) -> Path | None:
    """`path` made absolute with symbolic links resolved, or None for a symbolic link loop
    (`Path.resolve` raises RuntimeError for one before Python 3.13, OSError since)."""
    try:
        return path.resolve()
    except (RuntimeError, OSError):
        return None


_SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                  (stat.S_ISSOCK, "a socket"))


def special_file(path: Path) -> str | None:
    """What `path` is when it is no regular file — a FIFO, a device or a socket, whose `open()`
    or read can block forever — else None (a regular file, or one that cannot be stat'ed: the
    reader reports why, as for a dangling link)."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    return next((kind for test, kind in _SPECIAL_KINDS if test(mode)), None)


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
    rejected: list[tuple[Path, str]] | None = None,
) -> list[Path]:
    """Python files under `paths` (resolved, sorted, without duplicates).

    Directories are searched for `*.py` files that are not excluded and, with
    `respect_gitignore` (the default, as in ruff), not ignored by git. Paths that do not exist
    are appended to `missing` (the caller reports them). A symbolic link loop named in `paths`
    and a FIFO, device or socket (named or found) are left out, each appended to `rejected`
    with the reason (the path as given, or absolute when found under a directory)."""
    found: set[Path] = set()
    for given in paths:
        p = resolve(given)
        if p is None:
            if rejected is not None:
                rejected.append((given, "symbolic link loop; not read"))
            continue
        if p.is_dir():
            if force_exclude and p != excluder.root and excluder.excluded(p):
                continue
            listed = git_visible_python_files(p) if respect_gitignore else None
            under = _walk(p, excluder) if listed is None else (f for f in listed if not excluder.excluded(f, p))
            for f in under:
                kind = special_file(f)  # a `.py` FIFO would block the reader in open() forever
                if kind is None:
                    found.add(f)
                elif rejected is not None:
                    rejected.append((f, f"not a regular file ({kind}); not read"))
        elif p.exists() or p.is_symlink():
            if force_exclude and excluder.excluded(p):
                continue
            kind = special_file(p)
            if kind is None:
                found.add(p)  # named explicitly: linted whatever its suffix
            elif rejected is not None:
                rejected.append((given, f"not a regular file ({kind}); not read"))
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
