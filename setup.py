"""Only the optional C extension lives here; everything else is in pyproject.toml.

`runtime_guard._hotpath` does the jit wrapper's per-dispatch work in C (about half its cost).
`optional=True`: where it cannot be compiled (no compiler, no Python headers, CPython < 3.11, PyPy)
the install goes on and the guard uses its pure-Python twin.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("runtime_guard._hotpath", sources=["runtime_guard/_hotpath.c"], optional=True)])
