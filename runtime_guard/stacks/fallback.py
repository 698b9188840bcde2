"""In-process fallback when py-spy is missing or not permitted: Python's `faulthandler`.

The guard calls `install_fallback_dumper(path)` at start-up in every guarded process; it
registers a C-level signal handler that writes every thread's Python stack to `path`. That
handler runs even when the main thread is blocked inside C++ (a collective, a barrier) or holds
the GIL, which a Python-level signal handler or a helper thread could not rely on. The supervisor
then calls `request_fallback_dump(pid, path)`: it sends the signal and parses what was appended.

`snapshot_current_frames()` is a third, in-process-only method (`sys._current_frames()`), with
thread names, for code that runs inside the process (a guard thread, the pytest plugin).
"""

from __future__ import annotations

import faulthandler
import os
import re
import signal
import sys
import threading
import time
import traceback
from pathlib import Path
from typing import IO

from runtime_guard.report.model import Frame, StackSnapshot, Thread

HEADER = "# mcjax-faulthandler"
_HEADER_RE = re.compile(rf"^{re.escape(HEADER)} pid=(\d+) main_thread=(0x[0-9a-fA-F]+)\s*$", re.M)
_THREAD_RE = re.compile(r"^(Current thread|Thread) (0x[0-9a-fA-F]+)(?: \[(.*?)\])? \(most recent call first\):\s*$")
_FRAME_RE = re.compile(r'^\s+File "(.*)", line (\d+|\?\?\?) in (.*?)\s*$')

_installed: dict[int, IO[str]] = {}  # signum -> open file (faulthandler needs it kept open)
_request_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


class FallbackError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def install_fallback_dumper(path: str | os.PathLike[str], signum: int = signal.SIGUSR2) -> bool:
    """Make `signum` dump all threads' Python stacks to `path` (appending). Call it in the guarded
    process. Returns False (and changes nothing) if it cannot be installed; never raises, so a
    guard problem never breaks the user's program."""
    try:
        f = open(path, "a", buffering=1)  # noqa: SIM115 - kept open for the signal handler
        # The header lets the supervisor check that this pid really has the handler (signalling a
        # process without it would kill it) and tells which thread is the main one.
        f.write(f"{HEADER} pid={os.getpid()} main_thread={threading.main_thread().ident:#x}\n")
        f.flush()
        faulthandler.register(signum, file=f, all_threads=True, chain=False)
    except Exception as e:  # noqa: BLE001 - never break the user's program
        print(f"mcjax-guard: cannot install the faulthandler stack dumper: {e}", file=sys.stderr)
        return False
    old = _installed.pop(signum, None)
    _installed[signum] = f
    if old is not None and old is not f:
        old.close()
    return True


_crash_file: IO[str] | None = None
CRASH_METHOD = "faulthandler, as the process died"


def install_crash_dumper(path: str | os.PathLike[str]) -> bool:
    """On a fatal signal (SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL) make faulthandler write every
    thread's Python stack to `path` as the process dies. gloo aborts a process on a mismatched
    collective, and JAX aborts every other process when process 0 (the coordination service) goes
    away: the supervisor then has no live process to dump, but this file says where each one
    was. Never raises."""
    global _crash_file
    try:
        f = open(path, "w", buffering=1)  # noqa: SIM115 - kept open for the signal handler
        f.write(f"{HEADER} pid={os.getpid()} main_thread={threading.main_thread().ident:#x}\n")
        f.flush()
        faulthandler.enable(file=f, all_threads=True)
    except Exception as e:  # noqa: BLE001 - never break the user's program
        print(f"mcjax-guard: cannot install the faulthandler crash dumper: {e}", file=sys.stderr)
        return False
    if _crash_file is not None and _crash_file is not f:
        _crash_file.close()
    _crash_file = f
    return True


def read_crash_dump(path: str | os.PathLike[str]) -> StackSnapshot | None:
    """The stacks a dead process's crash dumper wrote, or None if it wrote none (it did not die of
    a fatal signal, or never installed one)."""
    try:
        p = Path(path)
        text = p.read_text(errors="replace")
        when = p.stat().st_mtime
    except OSError:
        return None
    header = _HEADER_RE.search(text)
    snap = parse_faulthandler(text, main_thread=header.group(2) if header else None, taken_at=when)
    if not any(t.frames for t in snap.threads):
        return None
    snap.method = CRASH_METHOD
    fatal = next((ln.strip() for ln in text.splitlines() if ln.startswith("Fatal Python error")), "")
    snap.note = fatal
    return snap


def uninstall_fallback_dumper(signum: int = signal.SIGUSR2) -> None:
    f = _installed.pop(signum, None)
    if f is not None:
        faulthandler.unregister(signum)
        f.close()


def _header_for(path: Path, pid: int) -> tuple[int, str] | None:
    """(offset just after the last header written by `pid`, main-thread id) or None."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return None
    found = None
    for m in _HEADER_RE.finditer(text):
        if int(m.group(1)) == pid:
            found = (m.end(), m.group(2).lower())
    return found


def request_fallback_dump(
    pid: int, path: str | os.PathLike[str], signum: int = signal.SIGUSR2, timeout: float = 3.0
) -> StackSnapshot:
    """Signal `pid` to dump its stacks into `path` and parse the new output. Raises FallbackError
    when the process has no dumper installed (it is never signalled then), is gone, or does not
    answer within `timeout`."""
    path = Path(path)
    with _lock_for(str(path)):
        header = _header_for(path, pid)
        if header is None:
            raise FallbackError("not-installed", f"no faulthandler dumper registered by pid {pid} in {path}")
        start = path.stat().st_size
        taken_at = time.time()
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            raise FallbackError("no-such-process", f"pid {pid} is gone") from None
        except PermissionError as e:
            raise FallbackError("permission-denied", f"cannot signal pid {pid}: {e}") from None
        text = _wait_for_output(path, start, timeout)
        if text is None:
            raise FallbackError("timed-out", f"faulthandler dump of pid {pid} did not arrive within {timeout:g} s")
    snap = parse_faulthandler(text, main_thread=header[1], taken_at=taken_at)
    if not snap.threads:
        raise FallbackError("failed", f"faulthandler output of pid {pid} had no thread")
    return snap


def _lock_for(key: str) -> threading.Lock:
    with _locks_guard:
        return _request_locks.setdefault(key, threading.Lock())


def _wait_for_output(path: Path, start: int, timeout: float) -> str | None:
    """The text appended after `start`, once it has stopped growing (the handler writes it in
    one go, thread after thread)."""
    deadline = time.monotonic() + timeout
    last, stable_since = start, None
    while time.monotonic() < deadline:
        size = path.stat().st_size
        if size > start and size == last:
            if stable_since is None:
                stable_since = time.monotonic()
            elif time.monotonic() - stable_since >= 0.1:
                with open(path, "rb") as f:
                    f.seek(start)
                    return f.read().decode(errors="replace")
        else:
            stable_since = None
        last = size
        time.sleep(0.02)
    return None


def parse_faulthandler(text: str, *, main_thread: str | None = None, taken_at: float = 0.0) -> StackSnapshot:
    """faulthandler's "Thread 0x... (most recent call first):" blocks → StackSnapshot."""
    threads: list[Thread] = []
    cur: Thread | None = None
    for line in text.splitlines():
        m = _THREAD_RE.match(line)
        if m:
            ident = m.group(2).lower()
            is_main = main_thread is not None and int(ident, 16) == int(main_thread, 16)
            name = m.group(3) or ("MainThread" if is_main else f"Thread {ident}")
            cur = Thread(thread_id=int(ident, 16), name=name, frames=[], active=True, is_main=is_main)
            threads.append(cur)
            continue
        m = _FRAME_RE.match(line)
        if m and cur is not None:
            lineno = int(m.group(2)) if m.group(2).isdigit() else 0
            cur.frames.append(Frame(name=m.group(3), file=m.group(1), line=lineno))
    return StackSnapshot(taken_at=taken_at, method="faulthandler", threads=threads)


def snapshot_current_frames() -> StackSnapshot:
    """Stacks of every thread of *this* process, with thread names (sys._current_frames)."""
    taken_at = time.time()
    names = {t.ident: t.name for t in threading.enumerate()}
    main = threading.main_thread().ident
    threads = []
    for ident, frame in sys._current_frames().items():
        # walk_stack goes innermost first, the order the model keeps; no source lookup needed.
        summary = traceback.StackSummary.extract(traceback.walk_stack(frame), lookup_lines=False)
        frames = [Frame(name=fs.name, file=fs.filename, line=fs.lineno or 0) for fs in summary]
        threads.append(
            Thread(thread_id=ident, name=names.get(ident, f"Thread {ident:#x}"), frames=frames, is_main=ident == main)
        )
    return StackSnapshot(taken_at=taken_at, method="sys._current_frames", threads=threads)
