"""Entry point of a guarded process: `python -m runtime_guard.bootstrap (SCRIPT | -m MODULE) ARGS...`.

`mcjax-guard` starts the user's program through this module: it installs the guard (settings from
the environment), then runs the program exactly as `python SCRIPT ARGS` would (same `sys.argv`,
`sys.path[0]` and `__main__`), and tells the other processes how the program left.
"""

from __future__ import annotations

import os
import runpy
import sys


def _usage() -> int:
    print("usage: python -m runtime_guard.bootstrap (SCRIPT | -m MODULE | -c CODE) [ARGS...]", file=sys.stderr)
    return 2


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        return _usage()

    from runtime_guard.report.user_traceback import install_excepthook

    install_excepthook()  # the program's tracebacks without runpy's and the guard's frames

    import atexit

    from runtime_guard import workers

    # The start-up hook (inherited by the program's own workers) would install a second guard
    # when `install` below imports JAX: this process installs its own.
    workers.disarm()

    from runtime_guard.guard import current, install
    from runtime_guard.settings import GuardSettings

    # Registered before JAX is imported, so it runs after JAX's own exit handler (atexit is LIFO):
    # the guard keeps comparing while JAX waits for the other processes at shutdown, and its
    # threads are stopped before the interpreter finalizes.
    atexit.register(lambda: current() is not None and current().stop_threads())

    settings = GuardSettings.from_env()
    workers.install_fallbacks(settings.state_dir)
    guard = install(settings)
    workers.register_process_hooks()

    code = 0
    error: BaseException | None = None
    try:
        if argv[0] == "-m":
            if len(argv) < 2:
                return _usage()
            sys.argv = argv[1:]
            sys.path.insert(0, os.getcwd())
            runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
        elif argv[0] == "-c":
            if len(argv) < 2:
                return _usage()
            sys.argv = ["-c", *argv[2:]]
            sys.path.insert(0, "")
            exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
        else:
            script = os.path.abspath(argv[0])
            guard.program = script
            sys.argv = argv
            sys.path[0] = os.path.dirname(script)
            runpy.run_path(script, run_name="__main__")
    except SystemExit as e:
        error = e
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        guard.mark_exit(code, e)
        raise
    except BaseException as e:
        error = e
        from runtime_guard.local_job import NO_CLUSTER, is_no_cluster_error

        if is_no_cluster_error(e):  # a usage problem: one line, not JAX's traceback
            guard.mark_exit(2, e)
            print(NO_CLUSTER, file=sys.stderr)
            return 2
        guard.mark_exit(1, e)
        raise
    finally:
        if error is None:
            guard.mark_exit(0, None)
    return code


if __name__ == "__main__":
    sys.exit(main())
