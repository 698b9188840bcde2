"""The jit wrapper's per-dispatch work in C, when the extension was built (`setup.py`).

`_hotpath.HotPath.record(key, args)` does what `GuardedJit.__call__` does in Python between
taking the caller's frame and calling JAX: the call-site lookup (without `sys._getframe` and
`frame.f_code`, which an audit hook makes dear), the argument-shape hash (`compat.make_arg_shapes`'
twin: shapes and dtypes), the registry check and the record into the ring under the recorder's lock. It returns
(seq, site, line, key), or None when the Python path must handle the call (a call site or a
shape variant seen for the first time). About half the wrapper's cost around a real dispatch
(docs/benchmarks.md). Set MCJAX_PURE_PYTHON=1 to use the Python path only.
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
    return _hotpath is not None and not os.environ.get("MCJAX_PURE_PYTHON")


def make(sites: dict, names: dict, recorder: Recorder) -> Any | None:
    """A HotPath over the guard's call-site cache, registry names and recorder, or None."""
    if not available():
        return None
    import numpy as np

    return _hotpath.HotPath(sites, names, recorder, recorder._buf, recorder._base, _RING_MASK, _FOLD_MASK,
                            compat.array_type(), np.ndarray, compat.DTYPE_CODES)
