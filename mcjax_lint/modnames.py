"""Dotted module names for source paths (shared by the engine and the tooling).

A file's module name runs from the *topmost* ancestor directory that is a regular package (has
an `__init__.py`) down to the file: `pkg/sub/mod.py` is `pkg.sub.mod`, `pkg/__init__.py` is
`pkg`. Directories without `__init__.py` *inside* a package are namespace packages (PEP 420) and
are kept (`checkpoint/_src/multihost/multihost.py` is `checkpoint._src.multihost.multihost`,
where stopping at the first missing `__init__.py` would name several files `multihost`). A file
with no package above it is named by its stem. A top-level namespace directory above the topmost
package (orbax's `orbax/`) is not part of the name; the project index matches such imports by
path suffix.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

_MAX_DEPTH = 64


def module_name(path: str, exists: Callable[[str], bool] = os.path.isfile) -> str:
    """Module name of `path`; `exists` answers whether a file exists (disk by default)."""
    path = os.path.normpath(path)
    directory, filename = os.path.split(path)
    stem = filename[:-3] if filename.endswith(".py") else (filename[:-4] if filename.endswith(".pyi") else filename)
    ancestors = []  # nearest first
    d = directory
    while d and len(ancestors) < _MAX_DEPTH:
        ancestors.append(d)
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    top = -1
    for i, a in enumerate(ancestors):
        if exists(os.path.join(a, "__init__.py")):
            top = i
    parts = [os.path.basename(a) for a in reversed(ancestors[: top + 1])]
    if stem != "__init__":
        parts.append(stem)
    # A directory that is not an identifier cannot be imported through: the name starts below it.
    for i in range(len(parts) - 1, -1, -1):
        if not parts[i].isidentifier():
            parts = parts[i + 1:]
            break
    if not parts:  # an `__init__.py` outside any package: name it by its directory
        parts = [os.path.basename(directory) or "__init__"]
    return ".".join(parts)


def module_names(paths: Iterable[str]) -> dict[str, str]:
    """Module names for a set of paths, counting both the given paths and the disk as existing.

    Paths that need not exist on disk (in-memory projects in tests) still form packages when
    their `__init__.py` is among `paths`. Two files that would get the same name (e.g.
    `examples/a/train.py` and `examples/b/train.py`) are told apart by their parent directories.
    """
    paths = list(paths)
    known = {os.path.normpath(p) for p in paths}
    cache: dict[str, bool] = {}

    def exists(p: str) -> bool:
        hit = cache.get(p)
        if hit is None:
            hit = cache[p] = os.path.normpath(p) in known or os.path.isfile(p)
        return hit

    names = {p: module_name(p, exists) for p in paths}
    by_name: dict[str, list[str]] = {}
    for p, n in names.items():
        by_name.setdefault(n, []).append(p)
    for n, group in by_name.items():
        if len(group) < 2:
            continue
        for depth in range(1, 9):
            cand = {p: _prefixed(p, n, depth) for p in group}
            if len(set(cand.values())) == len(group):
                names.update(cand)
                break
    return names


def _prefixed(path: str, name: str, depth: int) -> str:
    """`name` preceded by the last `depth` directories above the directories the name covers."""
    d = os.path.dirname(os.path.normpath(path))
    covered = name.count(".") + (1 if os.path.basename(path) == "__init__.py" else 0)
    for _ in range(covered):
        d = os.path.dirname(d)
    heads = []
    while d and len(heads) < depth:
        head = os.path.basename(d)
        if not head:
            break
        heads.insert(0, "".join(c if c.isalnum() or c == "_" else "_" for c in head))
        d = os.path.dirname(d)
    return ".".join(heads + [name])
