"""Built-in example programs for `mcjax-guard demo` (each runs as N local JAX processes)."""
