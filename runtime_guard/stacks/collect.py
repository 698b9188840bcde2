"""Collect stack snapshots from every local process of a job, in parallel, with fallbacks.

Per process: py-spy first; on a timeout, py-spy again with `--nonblocking`; when py-spy is
missing, not permitted, or still times out, the in-process faulthandler dumper (if the guard
installed one). Every snapshot records the method that produced it and, in `note`, why a
fallback was used, so the report can say it. Several snapshots `interval` seconds apart let the
report tell a stuck process (same stack every time) from a slow one.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Iterable, Sequence, Union

from runtime_guard.report.model import StackSnapshot
from runtime_guard.stacks import pyspy
from runtime_guard.stacks.fallback import FallbackError, request_fallback_dump


@dataclass(frozen=True)
class Target:
    process_index: int
    pid: int
    fallback_path: str | None = None  # file the process's faulthandler dumper writes to


TargetLike = Union[Target, Sequence]  # (process_index, pid, fallback_path|None)


def _as_target(t: TargetLike) -> Target:
    if isinstance(t, Target):
        return t
    idx, pid, *rest = t
    return Target(int(idx), int(pid), (str(rest[0]) if rest and rest[0] is not None else None))


class _ProcessCollector:
    """Remembers, across one process's snapshots, what failed before (no use asking py-spy
    again when it is missing; start non-blocking once blocking timed out)."""

    def __init__(self, target: Target, timeout: float, locals: bool, fallback_timeout: float) -> None:
        self.t = target
        self.timeout = timeout
        self.locals = locals
        self.fallback_timeout = fallback_timeout
        self.exe = pyspy.find_pyspy()
        self.pyspy_broken: str = "" if self.exe else pyspy.unavailable_reason()
        self.nonblocking = False
        self.gone = False

    def take(self, native: bool) -> StackSnapshot:
        stopped = is_stopped(self.t.pid)
        snap = self._take(native)
        snap.stopped = stopped
        return snap

    def _take(self, native: bool) -> StackSnapshot:
        notes: list[str] = []
        if not self.pyspy_broken:
            nat = native
            for _attempt in range(3):
                nat = nat and not self.nonblocking  # native frames need the target paused
                try:
                    snap = pyspy.dump(
                        self.t.pid, native=nat, nonblocking=self.nonblocking, locals=self.locals,
                        timeout=self.timeout, exe=self.exe,
                    )
                    snap.note = "; ".join(notes)
                    return snap
                except pyspy.PySpyError as e:
                    notes.append(f"{pyspy.method_name(nat, self.nonblocking)}: {e.reason}: {e}")
                    if e.reason == pyspy.GONE:
                        self.gone = True
                        return StackSnapshot(time.time(), "none", [], note="; ".join(notes + ["the process is gone"]))
                    if e.reason in (pyspy.TIMEOUT, pyspy.PERMISSION) and not self.nonblocking:
                        # Pausing the target stalled or was refused (e.g. another tracer is
                        # attached): reading its memory without pausing may still work.
                        self.nonblocking = True
                        continue
                    if e.reason == pyspy.FAILED and nat:
                        # e.g. "Failed to merge native and python frames": Python frames alone.
                        nat = False
                        continue
                    if e.reason in (pyspy.MISSING, pyspy.PERMISSION):
                        self.pyspy_broken = str(e)  # will not change before the next snapshot
                    break
        else:
            notes.append(self.pyspy_broken)
        if self.t.fallback_path:
            try:
                snap = request_fallback_dump(self.t.pid, self.t.fallback_path, timeout=self.fallback_timeout)
                snap.note = "; ".join(notes + ["stacks from the in-process faulthandler fallback"])
                return snap
            except FallbackError as e:
                notes.append(f"faulthandler: {e}")
                if e.reason == "no-such-process":
                    self.gone = True
        else:
            notes.append("no in-process fallback dumper for this process")
        return StackSnapshot(time.time(), "none", [], note="; ".join(notes))


def is_stopped(pid: int) -> bool:
    """Stopped by a signal (SIGSTOP, SIGTSTP) or held by a debugger: state T or t in /proc.
    False when unknown (not Linux, gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state in (b"T", b"t")


def collect_stacks(
    targets: Iterable[TargetLike],
    native: bool | str = False,
    snapshots: int = 2,
    interval: float = 2.0,
    timeout: float = 5.0,
    locals: bool = False,
    fallback_timeout: float = 3.0,
) -> dict[int, list[StackSnapshot]]:
    """{process_index: [snapshot, ...]} for every target, snapshots taken at the same moments in
    all processes. `native`: True, False, or "first" (native frames in the first snapshot only:
    they say what each process is blocked on, at ~1 s of pause; the later ones stay cheap).
    Bounded: returns within about snapshots*(interval + 2*timeout + fallback_timeout)."""
    tlist = [_as_target(t) for t in targets]
    results: dict[int, list[StackSnapshot]] = {t.process_index: [] for t in tlist}
    start = time.monotonic()

    def work(t: Target) -> None:
        c = _ProcessCollector(t, timeout, locals, fallback_timeout)
        for k in range(max(1, snapshots)):
            delay = start + k * interval - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            use_native = bool(native) and (native != "first" or k == 0)
            try:
                snap = c.take(use_native)
            except Exception as e:  # noqa: BLE001 - one process's failure must not lose the others
                snap = StackSnapshot(time.time(), "none", [], note=f"stack collection failed: {e!r}")
            results[t.process_index].append(snap)
            if c.gone:
                break

    threads = [threading.Thread(target=work, args=(t,), name=f"mcjax-stacks-{t.process_index}", daemon=True) for t in tlist]
    for th in threads:
        th.start()
    bound = max(1, snapshots) * (interval + 2 * timeout + fallback_timeout) + 5
    for th in threads:
        th.join(max(0.0, start + bound - time.monotonic()))
    return results
