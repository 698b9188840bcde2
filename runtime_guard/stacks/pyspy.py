"""Take one stack snapshot of a live process with `py-spy dump --json`.

py-spy reads the target's memory with ptrace, so it needs to be the target's parent (the
supervisor is), root, or allowed by Yama. It pauses the target while it reads unless
`--nonblocking`; `--native` (C/C++ frames, ~1 s) shows what a JAX call is blocked on.
Every failure is classified (`PySpyError.reason`) so the caller can fall back and say why.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from runtime_guard.procutil import pid_alive
from runtime_guard.report.model import Frame, StackSnapshot, Thread
from runtime_guard.stacks.redact import redact_locals

# Environment overrides (also used by tests to prove the fallback with real processes).
ENV_PYSPY = "MCJAX_PYSPY"  # path of the py-spy executable to use
ENV_DISABLE = "MCJAX_DISABLE_PYSPY"  # "1": never run py-spy, use the in-process fallback

# PySpyError.reason values
MISSING, PERMISSION, TIMEOUT, GONE, FAILED = "not-installed", "permission-denied", "timed-out", "no-such-process", "failed"


class PySpyError(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def find_pyspy() -> str | None:
    """The py-spy executable: $MCJAX_PYSPY, else PATH, else next to this interpreter (a venv
    whose bin/ is not on PATH). None when disabled or not found."""
    if os.environ.get(ENV_DISABLE, "") not in ("", "0"):
        return None
    forced = os.environ.get(ENV_PYSPY)
    if forced:
        return forced if os.path.isfile(forced) and os.access(forced, os.X_OK) else None
    found = shutil.which("py-spy")
    if found:
        return found
    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.is_file() and os.access(beside, os.X_OK) else None


def unavailable_reason() -> str:
    """Why find_pyspy() found nothing, for the report's note."""
    if os.environ.get(ENV_DISABLE, "") not in ("", "0"):
        return f"py-spy disabled by ${ENV_DISABLE}"
    if os.environ.get(ENV_PYSPY):
        return f"py-spy not found at ${ENV_PYSPY}={os.environ[ENV_PYSPY]}"
    return "py-spy not installed (pip install py-spy)"


def method_name(native: bool = False, nonblocking: bool = False) -> str:
    return "py-spy" + (" --native" if native else "") + (" --nonblocking" if nonblocking else "")


def dump(
    pid: int,
    *,
    native: bool = False,
    nonblocking: bool = False,
    locals: bool = False,
    timeout: float = 5.0,
    exe: str | None = None,
) -> StackSnapshot:
    """One snapshot of every Python thread of `pid`; raises PySpyError (with a reason) on failure."""
    exe = exe or find_pyspy()
    if exe is None:
        raise PySpyError(MISSING, unavailable_reason())
    cmd = [exe, "dump", "--json", "--pid", str(pid)]
    if native:
        cmd.append("--native")
    if nonblocking:
        cmd.append("--nonblocking")
    if locals:
        cmd.append("--locals")
    taken_at = time.time()
    try:
        # Own session so a timeout can kill py-spy without touching anything else.
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        raise PySpyError(MISSING if isinstance(e, FileNotFoundError) else FAILED, f"cannot run {exe}: {e}") from e
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # Killing py-spy detaches ptrace: the target resumes.
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise PySpyError(TIMEOUT, f"{method_name(native, nonblocking)} timed out after {timeout:g} s") from None
    if proc.returncode != 0:
        text = err.decode(errors="replace")
        raise PySpyError(_classify(text, pid), _first_line(text) or f"py-spy exited with {proc.returncode}")
    try:
        data = json.loads(out)
    except ValueError as e:
        raise PySpyError(FAILED, f"py-spy printed no JSON: {e}") from e
    return parse_pyspy_json(data, method=method_name(native, nonblocking), taken_at=taken_at, pid=pid)


def _classify(stderr: str, pid: int) -> str:
    low = stderr.lower()
    if "permission denied" in low or "operation not permitted" in low or "ptrace" in low:
        return PERMISSION
    if not pid_alive(pid) or "no such process" in low or "check that the process is running" in low:
        return GONE
    return FAILED


def _first_line(text: str) -> str:
    """py-spy's error line plus its innermost cause ("Failed to suspend process: EPERM: ...")."""
    head, cause, in_causes = "", "", False
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("Stack backtrace:"):
            break
        if line.startswith("Caused by:"):
            in_causes = True
            continue
        if not line:
            continue
        if not head:
            head = line.removeprefix("Error: ")
        elif in_causes:
            # "0: first cause" / "1: innermost cause", or one unnumbered cause line
            num, sep, rest = line.partition(": ")
            cause = rest if sep and num.isdigit() else line
    return f"{head}: {cause}" if cause and cause not in head else head


def parse_pyspy_json(data: Any, *, method: str = "py-spy", taken_at: float = 0.0, pid: int | None = None) -> StackSnapshot:
    """`py-spy dump --json` output (a list of threads) → StackSnapshot. Frames stay innermost first."""
    threads_in = data.get("threads", []) if isinstance(data, dict) else data
    native_dump = "--native" in method
    threads = []
    for t in threads_in:
        frames = []
        for f in t.get("frames", []):
            module = f.get("module") or ""
            # py-spy gives native frames the shared library as `module` (unresolved ones "?" as
            # filename and no module) and line 0; Python frames have no module.
            native = native_dump and (bool(module) or not f.get("line"))
            loc = None
            if f.get("locals"):
                loc = redact_locals({v.get("name", "?"): str(v.get("repr", "")) for v in f["locals"]})
            frames.append(
                Frame(
                    name=str(f.get("name", "?")),
                    file=str(f.get("filename") or module or "?"),
                    line=int(f.get("line") or 0),
                    module=module,
                    locals=loc,
                    native=native,
                )
            )
        name = t.get("thread_name") or ""
        if not name and pid is not None and t.get("os_thread_id") == pid:
            name = "MainThread"
        threads.append(
            Thread(
                thread_id=int(t.get("thread_id") or 0),
                name=name or f"Thread {t.get('os_thread_id') or t.get('thread_id')}",
                frames=frames,
                active=bool(t.get("active", True)),
                is_main=(pid is not None and t.get("os_thread_id") == pid) or name == "MainThread",
            )
        )
    return StackSnapshot(taken_at=taken_at, method=method, threads=threads)
