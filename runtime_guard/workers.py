"""Guarded workers: the processes a guarded program starts by itself.

A test harness that re-executes `/proc/self/exe`, `multiprocessing` (spawn, forkserver, fork) or
`subprocess.run([sys.executable, "worker.py"])` starts Python processes that `mcjax-guard` did not
start. They inherit its environment, and through it a start-up hook: `mcjax-guard` puts
`HOOK_DIR` (a directory holding only a `sitecustomize.py`) first on PYTHONPATH, so every Python
process of the job runs it at start-up. It imports nothing: it puts a watch for `import jax` on
`sys.meta_path`, and only a process that imports JAX gets the guard (`before_jax`, `after_jax`
here), which starts comparing once the process joins a distributed job
(`jax.distributed.initialize` with 2 or more processes). pip, a compiler helper or any other
Python process that never imports JAX is left alone.

Workers started as the base interpreter (`/proc/self/exe` resolves a virtualenv's `python` to the
interpreter it was made from) do not process the virtualenv's `.pth` files, so an editable
install is not importable there: the hook appends this package's import root (`ROOT_ENV`) to
`sys.path`, for the same Python version only.

A forked child (multiprocessing's fork and forkserver start methods) inherits its parent's guard,
hooks and flight-recorder mapping: `_after_fork_in_child` gives it a flight file of its own (its
dispatches must not land in the parent's), and a fork of a process that had already joined a
distributed job is not a process of that job (JAX's client does not survive a fork): the guard
stays off there.
"""

from __future__ import annotations

import os
import sys

ROOT_ENV = "MCJAX_GUARD_ROOT"  # "<major>.<minor>:<directory holding the runtime_guard package>"
HOOK_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker_hook")

_fork_hook_registered = False


# -- the supervisor's side ----------------------------------------------------------------------------

def worker_env(env: dict[str, str]) -> dict[str, str]:
    """`env` with the start-up hook first on PYTHONPATH and this install's import root named, so
    that every Python process started below a guarded program gets a guard (see module doc)."""
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != HOOK_DIR]
    env["PYTHONPATH"] = os.pathsep.join([HOOK_DIR, *parts])
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env[ROOT_ENV] = f"{sys.version_info[0]}.{sys.version_info[1]}:{root}"
    return env


# -- the start-up hook's work, once a process imports JAX ---------------------------------------------
# (the hook itself, runtime_guard/worker_hook/sitecustomize.py, imports nothing before that)

def disarm() -> None:
    """Stop watching for `import jax` (the bootstrap installs the guard itself)."""
    sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, "mcjax_guard_watch", False)]


def before_jax() -> None:
    """Called by the hook as JAX's package starts executing."""
    disarm()
    _register_exit_handler()  # before JAX's own, as the bootstrap does


def after_jax() -> None:
    """Called by the hook once JAX's package has executed: the guard, from the inherited settings."""
    _install_guard()


def _register_exit_handler() -> None:
    import atexit

    def stop() -> None:
        from runtime_guard.guard import current

        g = current()
        if g is not None:
            g.stop_threads()

    atexit.register(stop)


def install_fallbacks(state_dir: str) -> None:
    """Stack dumpers the supervisor reads when py-spy cannot (faulthandler on a signal, and on a
    fatal signal): one file per process in the run's private state directory."""
    if not state_dir:
        return
    try:
        from pathlib import Path

        from runtime_guard.stacks.fallback import install_crash_dumper, install_fallback_dumper

        d = Path(state_dir)
        d.mkdir(parents=True, exist_ok=True)
        install_fallback_dumper(d / f"faulthandler-{os.getpid()}.txt")
        install_crash_dumper(d / f"crash-{os.getpid()}.txt")
    except Exception as e:  # the fallback is optional; the program must run regardless
        print(f"mcjax-guard: no faulthandler fallback: {e!r}", file=sys.stderr)


def _install_guard() -> None:
    """The guard in a worker: settings from the inherited environment. Never fails the program."""
    try:
        from runtime_guard.guard import current, install
        from runtime_guard.settings import GuardSettings

        if current() is not None:
            return
        settings = GuardSettings.from_env()
        install_fallbacks(settings.state_dir)
        install(settings)
        register_process_hooks()
    except Exception as e:
        print(f"mcjax-guard: this worker (pid {os.getpid()}) runs unguarded: {e!r}", file=sys.stderr)


# -- fork --------------------------------------------------------------------------------------------

def register_process_hooks() -> None:
    """Forked children get a flight file of their own (see `_after_fork_in_child`), and a process
    leaving through `os._exit` says where it left (see `_mark_exit_on_os_exit`). Idempotent."""
    global _fork_hook_registered
    if _fork_hook_registered:
        return
    _fork_hook_registered = True
    if hasattr(os, "register_at_fork"):
        os.register_at_fork(after_in_child=_after_fork_in_child)
    _mark_exit_on_os_exit()


def _after_fork_in_child() -> None:
    try:
        from runtime_guard.guard import current

        g = current()
        if g is None:
            return
        joined = g.exchange is not None or g.active
        if joined:
            # The parent's JAX client, exchange threads and coordination-service session are the
            # parent's: this process is not one of the job's, and must not write as one (first, so
            # that nothing failing below leaves the child writing through the parent's client).
            g.active = False
            g.exchange = None
        g.reinit_locks_after_fork()
        flights = [g.flight] + [getattr(r, "flight", None) for r in list(g.streams.values())]
        for fr in flights:
            if fr is not None:
                fr.detach_in_child(keep_file=not joined)
    except Exception as e:
        print(f"mcjax-guard: forked process {os.getpid()}: {e!r}", file=sys.stderr)


def _mark_exit_on_os_exit() -> None:
    """Forked workers leave through `os._exit` (multiprocessing's fork and forkserver children do,
    with the target's exit status), as do programs that skip their teardown: no atexit handler and
    no JAX shutdown run then, so the guard says where the process left from there, as it does at
    a normal exit (a fork of a process of the job has no exchange: nothing to say)."""
    real_exit = os._exit

    def _exit(code: int) -> None:
        try:
            from runtime_guard.guard import current

            g = current()
            # (after a verdict the guard itself leaves this way: nothing more to say)
            if g is not None and g.exchange is not None and g.exchange.verdict is None:
                g.mark_exit(code, None)
                g.stop_threads()
        except BaseException:
            pass
        real_exit(code)

    os._exit = _exit


# -- the supervisor's view of processes it did not start ---------------------------------------------

def _parent_pid(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        return int(stat[stat.rindex(b")") + 2:].split()[1])  # the name may hold spaces and ')'
    except (OSError, ValueError, IndexError):
        return None


def descendants(states: dict[int, dict], roots: set[int]) -> dict[int, int]:
    """{pid: process index} of the job's processes (as their published states name them) that run
    below one of `roots` (the supervisor's children) and not as a root: workers a program started
    itself. Found through /proc's parent links, so a reused pid elsewhere never qualifies (none
    are found where there is no /proc)."""
    out: dict[int, int] = {}
    for p, st in states.items():
        pid = st.get("pid")
        if not isinstance(pid, int) or pid in roots:
            continue
        ancestor: int | None = pid
        for _ in range(64):
            ancestor = _parent_pid(ancestor)
            if ancestor is None or ancestor <= 1:
                break
            if ancestor in roots:
                out[pid] = p
                break
    return out
