"""Dotted module names for source paths (shared by the engine and the tooling).

A file's module name is found by walking up its directories while they contain an
`__init__.py` (a package); the first directory without one is the import root. A top-level
file is named by its stem; `pkg/__init__.py` is `pkg`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable


def module_name(path: str, exists: Callable[[str], bool] = os.path.isfile) -> str:
    """Module name of `path`; `exists` answers whether a file exists (disk by default)."""
    path = os.path.normpath(path)
    directory, filename = os.path.split(path)
    stem = filename[:-3] if filename.endswith(".py") else (filename[:-4] if filename.endswith(".pyi") else filename)
    parts = [] if stem == "__init__" else [stem]
    while directory and exists(os.path.join(directory, "__init__.py")):
        directory, package = os.path.split(directory)
        if not package:  # reached the filesystem root
            break
        parts.insert(0, package)
    if not parts:  # an `__init__.py` outside any package: name it by its directory
        parts = [os.path.basename(directory) or "__init__"]
    return ".".join(parts)


def module_names(paths: Iterable[str]) -> dict[str, str]:
    """Module names for a set of paths, counting both the given paths and the disk as existing.

    Paths that need not exist on disk (in-memory projects in tests) still form packages when
    their `__init__.py` is among `paths`.
    """
    paths = list(paths)
    known = {os.path.normpath(p) for p in paths}

    def exists(p: str) -> bool:
        return os.path.normpath(p) in known or os.path.isfile(p)

    return {p: module_name(p, exists) for p in paths}
