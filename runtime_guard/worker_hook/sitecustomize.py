"""mcjax-guard's start-up hook: every Python process started below a guarded program runs this.

It must cost nothing in a process that is not a JAX worker (pip, a compiler helper): without the
guard's settings in the environment it does nothing; with them it makes the guard importable and
arms a watch for `import jax` (runtime_guard.workers.arm), which imports nothing else. Then it
runs the `sitecustomize` this one shadows, if any. It never raises.
"""

import os
import sys


def _mcjax_guard_arm() -> None:
    if not os.environ.get("MCJAX_GUARD_SETTINGS"):
        return
    try:
        version, _, root = os.environ.get("MCJAX_GUARD_ROOT", "").partition(":")
        if root and version == f"{sys.version_info[0]}.{sys.version_info[1]}" and root not in sys.path:
            sys.path.append(root)
        from runtime_guard.workers import arm

        arm()
    except Exception as e:  # an older install, another interpreter: run the program unguarded
        print(f"mcjax-guard: this process (pid {os.getpid()}) runs unguarded: {e!r}", file=sys.stderr)


def _mcjax_guard_chain() -> None:
    """Run the next `sitecustomize` on sys.path (a distribution's or a virtualenv's own)."""
    try:
        from importlib.machinery import PathFinder

        here = os.path.dirname(os.path.abspath(__file__))
        rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
        spec = PathFinder.find_spec("sitecustomize", rest)
        if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
            return
        import importlib.util

        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    except Exception as e:
        print(f"mcjax-guard: error in the shadowed sitecustomize: {e!r}", file=sys.stderr)


_mcjax_guard_arm()
_mcjax_guard_chain()
