"""Summaries of installed libraries, computed from their own source.

A checkpoint helper of an installed library that reaches a barrier (`flax`'s `save_checkpoint`
handing on to orbax, which calls `multihost_utils.sync_global_devices`) is collective work
whichever table lists it. For the library functions a project actually uses, the same summary
pass that reads the project reads the library's source (found on `sys.path`, plus the configured
`library-paths`, never imported or run), and the index solves their facts with the project's:
a call into them is then as well understood as a call into the project.

Cost is bounded by what the project uses: the work starts from the names the project imports and
calls, follows only the functions and classes reached from there (`MAX_HOPS` calls deep,
`MAX_MODULES` modules in all), and skips packages that cannot do collective work of their own
(the standard library, JAX itself and numerical libraries, whose collectives are the built-in
tables in `knowledge.py`) and packages that do not depend on JAX. Summaries are cached per
package name and version in the lint cache: a warm run reads them, a new version is read again.
Without a library installed, the built-in tables are what is known about it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcjax_lint.analysis.summary import SUMMARY_VERSION, ModuleSummary, summarize_source
from mcjax_lint.errors import AnalysisError

MAX_MODULES = 150  # library modules read for one project
MAX_HOPS = 10  # calls followed from a name the project uses
MAX_MODULE_BYTES = 1024 * 1024
# Packages never read: their cross-process primitives are the built-in tables, and reading them
# (JAX alone is ~400k lines) would cost more than any project.
SKIPPED_PACKAGES = frozenset({
    "jax", "jaxlib", "numpy", "scipy", "tensorflow", "tf_keras", "keras", "torch", "mcjax_lint", "runtime_guard",
    "libcst", "pytest", "_pytest", "setuptools", "pkg_resources", "pip", "ml_dtypes", "opt_einsum",
})
_REQUIRES_JAX = re.compile(r"^Requires-Dist:\s*(jax|jaxlib|flax|orbax[-_a-z]*|optax|chex)\b", re.IGNORECASE | re.MULTILINE)


@dataclass
class LibrarySummaries:
    summaries: list[ModuleSummary] = field(default_factory=list)
    packages: dict[str, str] = field(default_factory=dict)  # top-level package -> version
    read: int = 0  # modules summarised in this run (the rest came from the cache)
    cached: int = 0
    seconds: float = 0.0
    cut: list[str] = field(default_factory=list)  # library functions whose callees were not read (MAX_HOPS)
    full: bool = False  # MAX_MODULES was reached

    def not_followed(self) -> str | None:
        """A warning when the bounds stopped the reading: collective work further down those
        library calls is then unknown (the built-in tables still apply)."""
        if not self.cut and not self.full:
            return None
        what = []
        if self.cut:
            names = ", ".join(f"`{q}`" for q in self.cut[:3]) + (f" and {len(self.cut) - 3} more" if len(self.cut) > 3 else "")
            what.append(f"calls more than {MAX_HOPS} deep into installed libraries ({names})")
        if self.full:
            what.append(f"library modules beyond the first {MAX_MODULES}")
        return " and ".join(what) + " were not read: collective work there may be missing from the findings"

    def fingerprint(self) -> str:
        """Changes when a library the project uses changes version (or its source, for a checkout)."""
        key = sorted((s.module, self.packages.get(s.module.split(".")[0], "")) for s in self.summaries)
        return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:16]


class _Package:
    __slots__ = ("top", "root", "version", "jax_dependent", "cache", "dirty")

    def __init__(self, top: str, root: str, version: str, jax_dependent: bool) -> None:
        self.top, self.root, self.version, self.jax_dependent = top, root, version, jax_dependent
        self.cache: dict = {}
        self.dirty = False


class _Finder:
    """Where a library's modules are (the first directory of the search path that has it) and
    which distribution version it is (its `*.dist-info`), without importing anything."""

    def __init__(self, search_path: Sequence[str]) -> None:
        self.dirs = [d for d in dict.fromkeys(search_path) if d and os.path.isdir(d)]
        self._packages: dict[str, _Package | None] = {}
        self._dists: dict[str, dict[str, tuple[str, str]]] = {}

    def _dist_table(self, d: str) -> dict[str, tuple[str, str]]:
        """top-level package -> (version, dist-info directory) for the distributions in `d`."""
        t = self._dists.get(d)
        if t is not None:
            return t
        t = {}
        try:
            entries = [e for e in os.listdir(d) if e.endswith(".dist-info")]
        except OSError:
            entries = []
        for e in sorted(entries):
            name, _, version = e[: -len(".dist-info")].partition("-")
            info = os.path.join(d, e)
            tops: set[str] = set()
            try:
                with open(os.path.join(info, "top_level.txt"), encoding="utf-8") as f:
                    tops = {x.strip() for x in f if x.strip()}
            except OSError:
                try:
                    with open(os.path.join(info, "RECORD"), encoding="utf-8") as f:
                        for line in f:
                            head = line.split(",", 1)[0].split("/", 1)[0]
                            if head and not head.endswith((".dist-info", ".data")) and not head.startswith(".."):
                                tops.add(head[:-3] if head.endswith(".py") else head)
                except OSError:
                    tops = {name}
            for top in tops:
                t.setdefault(top, (version, info))
        self._dists[d] = t
        return t

    def package(self, top: str) -> _Package | None:
        if top in self._packages:
            return self._packages[top]
        pkg = None
        if top.isidentifier() and top not in SKIPPED_PACKAGES and top not in sys.stdlib_module_names:
            for d in self.dirs:
                # (a directory without `__init__.py`: a namespace package, as `orbax` is)
                if os.path.isdir(os.path.join(d, top)) or os.path.isfile(os.path.join(d, top + ".py")):
                    dist = self._dist_table(d).get(top)
                    if dist is None:  # a source checkout on the path: its files' signatures version it
                        pkg = _Package(top, d, "source", True)
                    else:
                        pkg = _Package(top, d, dist[0], _requires_jax(dist[1]))
                    break
        self._packages[top] = pkg
        return pkg

    def module_file(self, pkg: _Package, module: str) -> str | None:
        parts = module.split(".")
        base = os.path.join(pkg.root, *parts)
        for cand in (base + ".py", os.path.join(base, "__init__.py")):
            if os.path.isfile(cand):
                return cand
        return None


def _requires_jax(info: str) -> bool:
    try:
        with open(os.path.join(info, "METADATA"), encoding="utf-8", errors="replace") as f:
            head = f.read(200_000)
    except OSError:
        return True
    return bool(_REQUIRES_JAX.search(head))


def _cache_file(cache_dir: Path, pkg: _Package) -> Path:
    safe = re.sub(r"[^A-Za-z0-9_.+-]", "_", f"{pkg.top}-{pkg.version}")
    return cache_dir / f"{safe}.json"


def _load_cache(cache_dir: Path | None, pkg: _Package) -> None:
    if cache_dir is None:
        return
    try:
        data = json.loads(_cache_file(cache_dir, pkg).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return
    if isinstance(data, dict) and data.get("v") == SUMMARY_VERSION and isinstance(data.get("modules"), dict):
        pkg.cache = data["modules"]


def _save_cache(cache_dir: Path | None, pkg: _Package) -> None:
    if cache_dir is None or not pkg.dirty:
        return
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        path = _cache_file(cache_dir, pkg)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps({"v": SUMMARY_VERSION, "modules": pkg.cache}), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only costs the next run the reading again


class _Reader:
    def __init__(self, finder: _Finder, cache_dir: Path | None, own_modules: set[str]) -> None:
        self.finder, self.cache_dir, self.own = finder, cache_dir, own_modules
        self.modules: dict[str, ModuleSummary | None] = {}
        self.packages: dict[str, _Package] = {}
        self.read = self.cached = 0
        self.full = False

    def summary(self, module: str) -> ModuleSummary | None:
        if module in self.modules:
            return self.modules[module]
        self.modules[module] = None
        top = module.split(".")[0]
        if top in self.own:
            return None
        if self.read + self.cached >= MAX_MODULES:
            self.full = True
            return None
        pkg = self.finder.package(top)
        if pkg is None or not pkg.jax_dependent:
            return None
        if top not in self.packages:
            self.packages[top] = pkg
            _load_cache(self.cache_dir, pkg)
        path = self.finder.module_file(pkg, module)
        if path is None:
            return None
        try:
            st = os.stat(path)
        except OSError:
            return None
        sig = [st.st_size, st.st_mtime_ns]
        hit = pkg.cache.get(module)
        s = None
        if isinstance(hit, dict) and hit.get("sig") == sig and hit.get("path") == path:
            try:
                s = ModuleSummary.from_dict(hit["summary"])
                self.cached += 1
            except Exception:  # a summary this version no longer reads: read the source again
                s = None
        if s is None:
            if st.st_size > MAX_MODULE_BYTES:
                return None
            try:
                with open(path, encoding="utf-8") as f:
                    source = f.read()
                s = summarize_source(source, path, module)
            except (OSError, UnicodeDecodeError, ValueError, AnalysisError, RecursionError):
                return None
            self.read += 1
            pkg.cache[module] = {"sig": sig, "path": path, "summary": s.to_dict()}
            pkg.dirty = True
        self.modules[module] = s
        return s

    def locate(self, name: str) -> tuple[ModuleSummary, str] | None:
        """The library module that defines or re-exports `name` and the rest of the name in it
        ("" for the module itself): `orbax.checkpoint.CheckpointManager` is `CheckpointManager` of
        the package `orbax.checkpoint`."""
        parts = name.split(".")
        for k in range(len(parts), 0, -1):
            mod = ".".join(parts[:k])
            s = self.summary(mod)
            if s is not None:
                return s, ".".join(parts[k:])
            if k == len(parts) and self.finder.package(parts[0]) is None:
                return None  # not a library that is read
        return None


def _names_used(summaries: Iterable[ModuleSummary]) -> list[str]:
    """What the project takes from other modules: import targets and the calls it makes by name."""
    out: dict[str, None] = {}
    for s in summaries:
        for q in s.imports.values():
            out[q] = None
        for m in s.imported_modules:
            out[m] = None
        for f in s.functions.values():
            for c in f.calls:
                n = c.get("n")
                if n:
                    out[n] = None
    return list(out)


def same_outside_names(old: ModuleSummary, new: ModuleSummary, path: Sequence[str]) -> bool:
    """Whether a changed file uses no new name from a library that is read (else the library
    modules behind the new names must be read: the index is rebuilt). New names from JAX, the
    standard library or packages not read change nothing."""
    own = new.module.split(".")[0]
    added = {n for n in _names_used([new]) if n.split(".")[0] != own} - set(_names_used([old]))
    if not added:
        return True
    finder = _Finder(path)
    for top in {n.split(".")[0] for n in added}:
        pkg = finder.package(top)
        if pkg is not None and pkg.jax_dependent:
            return False
    return True


def _reached(s: ModuleSummary, rest: str) -> list[str]:
    """The names a function or class of `s` calls (a class: all its methods, and its bases)."""
    q = f"{s.module}.{rest}" if rest else s.module
    out: list[str] = []
    head = rest.split(".")[0]
    if head and head in s.imports:  # a re-export: follow it to where it is defined
        tail = rest[len(head):]
        return [s.imports[head] + tail]
    c = s.classes.get(q)
    if c is not None:
        out.extend(c.bases)
    for fq, f in s.functions.items():
        if fq == q or fq.startswith(q + ".") and (c is not None or not rest):
            if not rest and f.cls:  # a module used as a whole: its functions, not every method
                continue
            for call in f.calls:
                n = call.get("n")
                if n:
                    out.append(n)
    return out


def library_summaries(project: Sequence[ModuleSummary], search_path: Sequence[str] | None = None,
                      cache_dir: Path | None = None) -> LibrarySummaries:
    """Summaries of the library modules `project` reaches (see the module docstring)."""
    t0 = time.perf_counter()
    finder = _Finder(list(search_path) if search_path is not None else sys.path)
    own = {s.module.split(".")[0] for s in project}
    reader = _Reader(finder, cache_dir, own)
    seen: set[str] = set()
    cut: list[str] = []
    work = [(n, 0) for n in _names_used(project) if n.split(".")[0] not in own]
    while work:
        name, hops = work.pop()
        if name in seen:
            continue
        seen.add(name)
        hit = reader.locate(name)
        if hit is None:
            continue
        s, rest = hit
        # A module imported as a whole (`from flax.training import checkpoints`) adds nothing by
        # itself: the names the project calls in it are on the work list already.
        if not rest:
            continue
        more = [n for n in _reached(s, rest) if n.split(".")[0] not in own and n not in seen
                and finder.package(n.split(".")[0]) is not None]
        if more and hops >= MAX_HOPS:
            cut.append(f"{s.module}.{rest}")  # said, not dropped silently (see `not_followed`)
            continue
        work.extend((n, hops + 1) for n in more)
    for pkg in reader.packages.values():
        _save_cache(cache_dir, pkg)
    out = LibrarySummaries(summaries=[m for m in reader.modules.values() if m is not None],
                           packages={t: p.version for t, p in reader.packages.items()},
                           read=reader.read, cached=reader.cached, cut=sorted(set(cut)),
                           full=reader.full)
    out.seconds = time.perf_counter() - t0
    return out


def search_path(library_paths: Sequence[str]) -> list[str]:
    """Where libraries are looked for: the configured directories, then this interpreter's path."""
    return [*library_paths, *sys.path]


def environment_fingerprint(path: Sequence[str]) -> str:
    """Changes when the distributions installed on `path` change (their `*.dist-info` names
    carry the versions: an install, an upgrade), so a cached index built with other library
    versions is not reused. Cheap: one listing per directory."""
    parts = []
    for d in dict.fromkeys(path):
        try:
            st = os.stat(d)
        except OSError:
            continue
        if not os.path.isdir(d):
            continue
        try:
            dists = sorted(e for e in os.listdir(d) if e.endswith(".dist-info"))
        except OSError:
            dists = []
        parts.append([d, dists])  # (not the directory's mtime: the project's own root is on the path)
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()[:16]
