"""How `mcjax-guard dump` finds running supervisors, and where snapshot reports go.

Contract with the supervisor (runtime_guard's launcher):
- at start: `path = register_supervisor(report_dir, num_processes=N, argv=sys.argv)`; at exit:
  `unregister_supervisor(path)` (a stale file of a dead supervisor is ignored and cleaned up);
- on SIGUSR1: write a snapshot report into `new_snapshot_dir(report_dir)` with
  `runtime_guard.postmortem.collect_and_write("snapshot", ...)`, without stopping the job.

Run files live in $MCJAX_RUN_DIR, else $XDG_RUNTIME_DIR/mcjax-guard, else
/tmp/mcjax-guard-<uid>; one JSON file per supervisor, named by its pid. The directory is this
user's, mode 0700 (a predictable name in /tmp may have been made by someone else first: such a
directory is refused). A run file is believed only while its pid is a live process of this user
that started when the file says: `dump` never signals a pid that a dead supervisor's file names
and that the system has since given to another process.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
import time
from pathlib import Path
from typing import Any

from runtime_guard.procutil import owner, pid_alive, start_time

SNAPSHOT_PREFIX = "snapshot-"


class RunDirError(OSError):
    """The run directory is not this user's private directory (one line)."""


def run_dir() -> Path:
    if os.environ.get("MCJAX_RUN_DIR"):
        return Path(os.environ["MCJAX_RUN_DIR"])
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / "mcjax-guard"
    return Path(tempfile.gettempdir()) / f"mcjax-guard-{os.getuid()}"


def private_run_dir(create: bool = True) -> Path:
    """run_dir(), made mode 0700 if missing; RunDirError if it is a symlink, not a directory, or
    owned by another user. A group- or world-accessible directory of ours is narrowed to 0700."""
    d = run_dir()
    if create:
        try:
            d.mkdir(parents=True, exist_ok=True, mode=0o700)
        except OSError as e:
            raise RunDirError(f"cannot create the run directory {d}: {e.strerror or e}") from None
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        return d
    if not stat.S_ISDIR(st.st_mode):
        raise RunDirError(f"the run directory {d} is not a directory (a symlink?): remove it or set MCJAX_RUN_DIR")
    if st.st_uid != os.getuid():
        raise RunDirError(f"the run directory {d} belongs to uid {st.st_uid}, not to you (uid {os.getuid()}): "
                          f"remove it or set MCJAX_RUN_DIR")
    if st.st_mode & 0o077:
        os.chmod(d, 0o700)
    return d


def register_supervisor(report_dir: str | os.PathLike[str], **info: Any) -> Path:
    d = private_run_dir()
    pid = os.getpid()
    path = d / f"{pid}.json"
    data = {"pid": pid, "start_time": start_time(pid), "uid": os.getuid(),
            "report_dir": str(Path(report_dir).resolve()), "started": time.time(), "cwd": os.getcwd(), **info}
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(json.dumps(data, default=str))
    os.replace(tmp, path)
    return path


def unregister_supervisor(path: str | os.PathLike[str]) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def is_live_supervisor(info: dict[str, Any]) -> bool:
    """Is the run file's pid the live process of this user that wrote it (same start time)?"""
    try:
        pid, started = int(info["pid"]), info.get("start_time")
    except (KeyError, TypeError, ValueError):
        return False
    if pid <= 0 or started is None or not pid_alive(pid):
        return False
    return start_time(pid) == int(started) and owner(pid) == os.getuid()


def list_supervisors() -> list[dict[str, Any]]:
    """Running supervisors of this user, oldest first. Run files that name no live supervisor (it
    died; its pid may now be another process's) are removed. RunDirError: see private_run_dir."""
    d = private_run_dir(create=False)
    out = []
    for f in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            info = json.loads(f.read_text())
        except (OSError, ValueError):
            continue
        if not isinstance(info, dict) or not is_live_supervisor(info):
            unregister_supervisor(f)
            continue
        info["run_file"] = str(f)
        out.append(info)
    return sorted(out, key=lambda i: i.get("started", 0))


def new_snapshot_dir(report_dir: str | os.PathLike[str]) -> Path:
    """A fresh directory for one snapshot report under the job's report directory."""
    base = Path(report_dir)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    for n in range(1000):
        p = base / f"{SNAPSHOT_PREFIX}{stamp}-{n:03d}"
        try:
            p.mkdir(parents=True)
            return p
        except FileExistsError:
            continue
    raise RuntimeError(f"cannot create a snapshot directory under {base}")


def snapshot_reports(report_dir: str | os.PathLike[str]) -> list[Path]:
    """Completed snapshot reports (their report.json), oldest first."""
    base = Path(report_dir)
    if not base.is_dir():
        return []
    return sorted(p / "report.json" for p in base.glob(f"{SNAPSHOT_PREFIX}*") if (p / "report.json").is_file())
