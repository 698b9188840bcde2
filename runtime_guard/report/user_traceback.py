"""Tracebacks of the user's program without the guard's frames, as pytest hides its own.

`mcjax-guard` runs the program through runpy and the guard's wrappers sit between the user's call
and JAX: an uncaught exception would show runpy's and the guard's frames around the user's. The
hook installed here drops them before the usual printing (the previous `sys.excepthook` still
prints): frames of runtime_guard/ (but not its example programs) and of runpy. A SyntaxError in
the program then prints as `python script.py` prints it; strict mode's DivergenceError ends on the
user's line. An exception with no frame of the user's (a bug of the guard itself) keeps them all.
"""

from __future__ import annotations

import os
import sys
import types
from typing import Any

_GUARD_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_EXAMPLES = os.path.join(_GUARD_DIR, "examples") + os.sep


def is_guard_frame(filename: str) -> bool:
    """The guard's own code, or runpy, which the guard runs the program through."""
    if filename.startswith(_EXAMPLES):
        return False
    return filename.startswith(_GUARD_DIR) or filename in ("<frozen runpy>", "runpy.py") or filename.endswith("/runpy.py")


def user_traceback(exc: BaseException, tb: types.TracebackType | None) -> types.TracebackType | None:
    """`tb` without the guard's frames; `tb` itself when it has no frame of the user's (unless it is
    a SyntaxError, raised while compiling the user's file: its location is in the exception)."""
    entries = []
    t = tb
    while t is not None:
        entries.append(t)
        t = t.tb_next
    if not any(not is_guard_frame(e.tb_frame.f_code.co_filename) for e in entries):
        return None if isinstance(exc, SyntaxError) else tb
    out = None
    for e in reversed(entries):
        if not is_guard_frame(e.tb_frame.f_code.co_filename):
            out = types.TracebackType(out, e.tb_frame, e.tb_lasti, e.tb_lineno)
    return out


def _trim_chain(exc: BaseException, seen: set[int]) -> None:
    """The exceptions it was raised from, or while handling, lose the guard's frames too."""
    for other in (exc.__cause__, exc.__context__):
        if other is not None and id(other) not in seen:
            seen.add(id(other))
            other.__traceback__ = user_traceback(other, other.__traceback__)
            _trim_chain(other, seen)


def install_excepthook() -> None:
    """Wrap `sys.excepthook` (never raises; a failure keeps the full traceback)."""
    prev = sys.excepthook

    def hook(et: Any, ev: Any, tb: Any) -> None:
        try:
            tb = user_traceback(ev, tb)
            if ev is not None:
                ev.__traceback__ = tb
                _trim_chain(ev, {id(ev)})
        except Exception:  # noqa: BLE001 - the user's error must still be printed
            pass
        prev(et, ev, tb)

    sys.excepthook = hook
