"""How `mcjax-guard dump` finds running supervisors, and where snapshot reports go.

Contract with the supervisor (runtime_guard's launcher):
- at start: `path = register_supervisor(report_dir, num_processes=N, argv=sys.argv)`; at exit:
  `unregister_supervisor(path)` (a stale file of a dead supervisor is ignored and cleaned up);
- on SIGUSR1: write a snapshot report into `new_snapshot_dir(report_dir)` with
  `runtime_guard.postmortem.collect_and_write("snapshot", ...)`, without stopping the job.

Run files live in $MCJAX_RUN_DIR, else $XDG_RUNTIME_DIR/mcjax-guard, else
/tmp/mcjax-guard-<uid>; one JSON file per supervisor, named by its pid.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from runtime_guard.procutil import pid_alive

SNAPSHOT_PREFIX = "snapshot-"


def run_dir() -> Path:
    if os.environ.get("MCJAX_RUN_DIR"):
        return Path(os.environ["MCJAX_RUN_DIR"])
    if os.environ.get("XDG_RUNTIME_DIR"):
        return Path(os.environ["XDG_RUNTIME_DIR"]) / "mcjax-guard"
    return Path(tempfile.gettempdir()) / f"mcjax-guard-{os.getuid()}"


def register_supervisor(report_dir: str | os.PathLike[str], **info: Any) -> Path:
    d = run_dir()
    d.mkdir(parents=True, exist_ok=True, mode=0o700)
    path = d / f"{os.getpid()}.json"
    data = {"pid": os.getpid(), "report_dir": str(Path(report_dir).resolve()), "started": time.time(), "cwd": os.getcwd(), **info}
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(data, default=str))
    os.replace(tmp, path)
    return path


def unregister_supervisor(path: str | os.PathLike[str]) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def list_supervisors() -> list[dict[str, Any]]:
    """Running supervisors of this user, oldest first; stale run files are removed."""
    d = run_dir()
    out = []
    for f in sorted(d.glob("*.json")) if d.is_dir() else []:
        try:
            info = json.loads(f.read_text())
            pid = int(info["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not pid_alive(pid):
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
