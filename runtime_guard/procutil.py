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
