"""runtime_guard: catch divergent dispatches across JAX processes, and explain hangs."""

__version__ = "0.1.0"
