"""mcjax-guard's start-up hook: every Python process started below a guarded program runs this.

It must cost nothing in a process that is not a JAX worker (pip, a compiler helper): without the
guard's settings in the environment it does nothing; with them it makes the guard's install
importable and puts a watch for `import jax` on `sys.meta_path`, importing nothing. Only when the
process imports JAX does it import `runtime_guard.workers`, which installs the guard. Then it runs
the `sitecustomize` this one shadows, if any. It never raises.
"""

import os
import sys


class _JaxImportWatcher:
    """A meta-path finder that answers only for `jax`: the other finders find it, and the guard
    is installed around the execution of JAX's package."""

    mcjax_guard_watch = True  # how runtime_guard.workers.disarm finds it

    def find_spec(self, name, path=None, target=None):
        if name != "jax":
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _GuardAround(spec.loader, spec)
                return spec
        return None


class _GuardAround:
    """JAX's own loader, with the guard installed once the package has executed."""

    def __init__(self, loader, spec):
        self._loader, self._spec = loader, spec

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        # Nothing downstream sees this wrapper (importlib.resources asks the spec's loader).
        self._spec.loader = module.__loader__ = self._loader
        try:
            from runtime_guard import workers
        except Exception as e:
            print(f"mcjax-guard: this process (pid {os.getpid()}) runs unguarded: {e!r}", file=sys.stderr)
            return self._loader.exec_module(module)
        workers.before_jax()
        self._loader.exec_module(module)
        workers.after_jax()

    def __getattr__(self, name):
        return getattr(self._loader, name)


def _mcjax_guard_arm():
    if not os.environ.get("MCJAX_GUARD_SETTINGS"):
        return
    version, _, root = os.environ.get("MCJAX_GUARD_ROOT", "").partition(":")
    if root and version == f"{sys.version_info[0]}.{sys.version_info[1]}" and root not in sys.path:
        sys.path.append(root)
    if "jax" not in sys.modules:
        sys.meta_path.insert(0, _JaxImportWatcher())


def _mcjax_guard_chain():
    """Run the next `sitecustomize` on sys.path (a distribution's or a virtualenv's own)."""
    from importlib.machinery import PathFinder

    here = os.path.dirname(os.path.abspath(__file__))
    spec = PathFinder.find_spec("sitecustomize", [p for p in sys.path if os.path.abspath(p or os.curdir) != here])
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    import importlib.util

    spec.loader.exec_module(importlib.util.module_from_spec(spec))


for _step in (_mcjax_guard_arm, _mcjax_guard_chain):
    try:
        _step()
    except Exception as _e:  # never stop the program: it runs unguarded
        print(f"mcjax-guard: start-up hook of pid {os.getpid()}: {_e!r}", file=sys.stderr)
