"""The jit wrapper's per-dispatch work in C, when the extension was built (`setup.py`).

`_hotpath.JitBase` is GuardedJit's base class: its `tp_call` is the hot path, with no Python
frame of its own. A call of a function known to run across every process, in fast mode, is
recorded there (the call site from the caller's frame through the C API, without `sys._getframe`
and `frame.f_code`, which an audit hook makes dear; the argument-shape hash, `compat.make_arg_shapes`'
twin, each aval's shape and dtype read once; the registry check; the record into the ring through
the recorder's slots, under its lock or, while no thread holds that lock, under the GIL alone,
which nothing in that section can release), forwarded to JAX,
and settled when JAX returns a concrete result (an array, or a train step's tuple, list or dict of
them; `GuardedJit._settle` looks closer at anything else). Anything else (a call site or shape variant seen for
the first time, a traced call, any other mode) goes to `GuardedJit._call_py`, the Python path.
The call in progress is kept per thread for the hooks on JAX's Python path (`current_function`).

`_hotpath.HotPath` holds the guard's call-site cache, registry names and recorder, with copies of
their hits that need no Python ints; `HotPath.record(key, args)` does the same record for
`_call_py` when a hot call reaches it, and returns (seq, site, line, key) or None.
Set MCJAX_PURE_PYTHON=1 (before the guard is imported) to use the Python path only.
"""

from __future__ import annotations

import os
from typing import Any

from runtime_guard import compat
from runtime_guard.recorder import _FOLD_MASK, _RING_MASK, Recorder

try:
    from runtime_guard import _hotpath
except ImportError:  # not built here (no compiler, CPython < 3.11, PyPy): the Python path does it
    _hotpath = None


def available() -> bool:
    # (an extension built from an older _hotpath.c lacks `enter`: the Python path, rather than a
    # C path that does not count calls in flight)
    return _hotpath is not None and hasattr(_hotpath.HotPath, "enter") and not os.environ.get("MCJAX_PURE_PYTHON")


def jit_base() -> type | None:
    """`_hotpath.JitBase`, GuardedJit's C base (its call is the hot path), or None."""
    return _hotpath.JitBase if available() else None


def current_function() -> Any:
    """`_hotpath.current`: () -> this thread's innermost call on the C hot path, as
    (caller frame, wrapper, site, line, seq, key), or None."""
    return _hotpath.current


def make(sites: dict, names: dict, recorder: Recorder) -> Any | None:
    """A HotPath over the guard's call-site cache, registry names and recorder, or None."""
    if not available():
        return None
    import numpy as np

    return _hotpath.HotPath(sites, names, recorder, recorder._buf, recorder._base, _RING_MASK, _FOLD_MASK,
                            compat.array_type(), np.ndarray, compat.DTYPE_CODES)
