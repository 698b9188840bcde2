"""runtime_guard: catch divergent dispatches across JAX processes, and explain hangs.

    import runtime_guard
    runtime_guard.install()                      # settings from MCJAX_GUARD_SETTINGS, or keywords
    with runtime_guard.guarded(mode="strict"):   # or scoped

`mcjax-guard python train.py` installs it without any change to the program.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:
    from runtime_guard.guard import DivergenceError, Guard, guarded

__all__ = ["DivergenceError", "Guard", "current", "guarded", "install", "uninstall", "__version__"]


def __getattr__(name: str) -> Any:
    # Lazy: importing the package (e.g. for its CLI or the pytest plugin) must not import JAX.
    if name in ("install", "uninstall", "current", "guarded", "DivergenceError", "Guard"):
        from runtime_guard import guard

        return getattr(guard, name)
    raise AttributeError(f"module 'runtime_guard' has no attribute {name!r}")
