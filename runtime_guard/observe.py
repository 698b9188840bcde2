"""What the guard saw, for the linter: the Python functions on the stack of cross-process dispatches.

The guard calls `Observer.saw(frame)` only where it already does slow-path work: a hot-path call
site seen for the first time, JAX's Python dispatch path (an executable's first run, and
dispatches that never take the C++ path) and AOT calls; never on the hot path of a cached
dispatch. Each call position (the first frame outside JAX and the guard, with its caller's
position) is walked once: the qualified names of every frame between the program and the
dispatch (`mylib.ckpt.save_all`, `train.Trainer.evaluate`, and the package names a function is
re-exported under, `mylib.save_all`) are appended to `observed-<pid>.jsonl` in the guard's state
directory as they are first seen, so a hang or a kill loses nothing. When the run ends, the
supervisor merges them into one run file in the project's mcjax-lint cache directory
(`save_run`), which `mcjax-lint` reads (mcjax_lint/observed.py).
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import threading
from pathlib import Path
from typing import Any

# Frames of the machinery that runs the program, not of the program: never learned.
_RUNNERS = frozenset({"runtime_guard", "jax", "jaxlib", "mcjax_lint", "_pytest", "pytest", "pluggy", "xdist",
                      "execnet", "IPython", "ipykernel", "debugpy", "pydevd", "coverage"})
# The standard library's directories (a frozen module's file starts with "<").
_STDLIB = tuple(sorted({os.path.join(os.path.realpath(p), "") for k in ("stdlib", "platstdlib")
                        if (p := sysconfig.get_paths().get(k))} | {os.path.join(p, "") for k in ("stdlib", "platstdlib")
                                                                     if (p := sysconfig.get_paths().get(k))}))
_INSTALLED = ("/site-packages/", "/dist-packages/")
MAX_POSITIONS = 100_000  # generated code: call positions without end
MAX_DEPTH = 200


class Observer:
    """Learns the functions on the stack of cross-process dispatches; writes them to `path`."""

    def __init__(self, path: str | os.PathLike[str], skip_frames: tuple[str, ...]) -> None:
        self.path = str(path)
        self._skip = skip_frames
        self._skipped: dict[str, bool] = {}  # co_filename -> a JAX or guard frame
        # (id(code), lasti, id(caller code), caller lasti) -> the code objects (kept alive, so
        # their ids stay theirs).
        self._positions: dict[tuple[int, int, int, int], tuple[Any, Any]] = {}
        self.names: set[str] = set()
        self._lock = threading.Lock()
        self.failed = False

    def saw(self, frame: Any) -> None:
        """A cross-process dispatch is being made with `frame` on the stack. Never raises."""
        if frame is None or self.failed:
            return
        try:
            f, skipped = frame, self._skipped
            while f is not None:  # to the first frame outside JAX and the guard (inlined: per call)
                name = f.f_code.co_filename
                hit = skipped.get(name)
                if hit is None:
                    hit = skipped[name] = any(s in name for s in self._skip)
                if not hit:
                    break
                f = f.f_back
            if f is None:
                return
            up = f.f_back
            key = (id(f.f_code), f.f_lasti, id(up.f_code) if up is not None else 0, up.f_lasti if up is not None else 0)
            if key in self._positions:
                return
            with self._lock:
                if key in self._positions:
                    return
                if len(self._positions) > MAX_POSITIONS:
                    self._positions.clear()
                self._positions[key] = (f.f_code, up.f_code if up is not None else None)
                new = [e for e in self._walk(f) if e["name"] not in self.names]
                if new:
                    self.names.update(e["name"] for e in new)
                    with open(self.path, "a", encoding="utf-8") as out:
                        out.write("".join(json.dumps(e) + "\n" for e in new))
        except Exception:  # noqa: BLE001 - learning is an extra: never in the way of a dispatch
            self.failed = True

    def _is_skipped(self, code: Any) -> bool:
        name = code.co_filename
        hit = self._skipped.get(name)
        if hit is None:
            hit = self._skipped[name] = any(s in name for s in self._skip)
        return hit

    def _is_runner(self, code: Any, mod: str) -> bool:
        """A frame of the standard library or of what runs the program (pytest, a debugger)."""
        name = code.co_filename
        if name.startswith("<") or mod.partition(".")[0] in _RUNNERS:
            return True
        return name.startswith(_STDLIB) and not any(m in name for m in _INSTALLED)

    def _walk(self, f: Any) -> list[dict[str, str]]:
        out: list[dict[str, str]] = []
        depth = 0
        while f is not None and depth < MAX_DEPTH:
            depth += 1
            code = f.f_code
            mod = f.f_globals.get("__name__")
            qual = getattr(code, "co_qualname", code.co_name)
            if (isinstance(mod, str) and "<" not in qual and code.co_name != "<module>"
                    and not self._is_runner(code, mod) and not self._is_skipped(code)):
                for name in _names(mod, qual, code):
                    out.append({"name": name, "file": code.co_filename})
            f = f.f_back
        return out


def _names(mod: str, qual: str, code: Any) -> list[str]:
    """`mod.qual`, and the same function under each parent package that re-exports it
    (`from ._impl import save_all` in `mylib/__init__.py`: `mylib.save_all`)."""
    names = [f"{mod}.{qual}"]
    head = qual.partition(".")[0]
    module = sys.modules.get(mod)
    obj = getattr(module, head, None) if module is not None else None
    if obj is None or mod == "__main__":
        return names
    parts = mod.split(".")
    for i in range(len(parts) - 1, 0, -1):
        pkg = sys.modules.get(".".join(parts[:i]))
        if pkg is not None and getattr(pkg, head, None) is obj:
            names.append(f"{'.'.join(parts[:i])}.{qual}")
    return names


def observer_for(settings: Any) -> Observer | None:
    """An Observer writing into the guard's state directory, or None (no supervisor)."""
    if not getattr(settings, "state_dir", ""):
        return None
    return Observer(Path(settings.state_dir) / f"observed-{os.getpid()}.jsonl", tuple(settings.skip_frames))


def save_run(state_dir: str | os.PathLike[str], program: str, start: str | os.PathLike[str] | None = None) -> Path | None:
    """Merge the processes' observed functions into one run file in the mcjax-lint cache directory
    of the project at or above `start` (the current directory). None when there is nothing to
    write or no project; never raises."""
    try:
        functions: list[dict] = []
        for f in sorted(Path(state_dir).glob("observed-*.jsonl")):
            for line in f.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    e = json.loads(line)
                except ValueError:
                    continue  # a line cut by a kill
                if isinstance(e, dict):
                    functions.append(e)
        if not functions:
            return None
        from mcjax_lint import observed
        from mcjax_lint.config import ConfigError, load_config

        try:
            config = load_config(None, Path(start or os.getcwd()))
        except ConfigError:
            return None
        d = observed.observed_dir(config.project_root, config.cache_dir)
        return observed.write_run(d, functions, program) if d is not None else None
    except Exception as e:  # noqa: BLE001 - the run's outcome must not depend on this
        print(f"mcjax-guard: could not save the observed functions: {e!r}", file=sys.stderr)
        return None
