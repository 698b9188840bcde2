"""Small helpers about OS processes, shared by the supervisor's tools."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Does a process with this pid exist (ours or another user's)?"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists; we may not signal it
    return True


def pid_running(pid: int) -> bool:
    """Exists and is not a zombie (a process that died but was not reaped yet). Running,
    sleeping, in uninterruptible I/O or stopped (a debugger) all count: it may still go on."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except FileNotFoundError:
        return False
    except OSError:
        return pid_alive(pid)  # no /proc (not Linux): existence is all we can tell
    state = stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3]  # the field after "(comm)"
    return state not in (b"Z", b"X", b"x")


def start_time(pid: int) -> int | None:
    """When the process started (clock ticks since boot, /proc/PID/stat field 22), or None where
    unknown. With the pid it names one process for good: a pid reused later has another."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
        # Fields after "(comm)" start at field 3; comm may hold spaces and parentheses.
        return int(stat[stat.rfind(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return None


def owner(pid: int) -> int | None:
    """The uid that owns the process, or None where unknown."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return None
