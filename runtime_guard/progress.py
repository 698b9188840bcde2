"""What `mcjax-guard` says while it runs: a banner, a live status line, a summary.

All on stderr, nothing with `-q`. The live line (rich) is drawn on a terminal only; in a pipe or a
CI log there is the banner and the summary, one line each. Counts come from the states each
guarded process leaves in the supervisor's state directory (`p<i>.json`, written by the exchange
at most a second apart and at exit): a dispatch is *compared* once every process has reached it
(the comparator on process 0 checks the rolling hashes up to there every round); computations
over a subset of the processes count once per subset.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import Any, TextIO

from runtime_guard.settings import GuardSettings


def hang_threshold_text(settings: GuardSettings) -> str:
    """The hang threshold as the comparator will apply it (its own Tracker says, before learning)."""
    if settings.timeout > 0:
        return f"hang threshold {settings.timeout:g} s"
    from runtime_guard.compare import Tracker

    first = Tracker(died_after=settings.died_after, timeout=0.0, min_learned=settings.min_learned_timeout,
                    factor=settings.learned_factor).threshold()
    return f"hang threshold {first:g} s until step times are learned"


def banner(processes: int | None, devices: tuple[int, str] | None, settings: GuardSettings, report_dir: str) -> str:
    if processes is None:
        who = "wrapping 1 process of a cluster job"
    else:
        who = f"{processes} process{'es' if processes != 1 else ''}"
        if devices is not None:
            count, source = devices
            who += f" x {count} CPU device{'s' if count != 1 else ''}" + (f" ({source})" if source != "default" else "")
    return (f"mcjax-guard: {who}, {settings.mode} mode, {hang_threshold_text(settings)}, "
            f"reports to {report_dir.rstrip('/')}/")


def compared(states: dict[int, dict], expected: int | None) -> int | None:
    """Dispatches every process has reached (None: no process joined a multi-process job yet).
    `expected`: the local processes (`-n`); None when wrapping one process of a cluster job,
    whose own count is all this host knows."""
    if not states:
        return None
    from runtime_guard.compare import subset_states

    if expected is not None and len(states) < expected:
        return 0
    total = min(int(st.get("seq", 0)) for st in states.values())
    for sub, members in subset_states(states).items():
        if expected is None or len(members) == len(sub):
            total += min(int(m.get("seq", 0)) for m in members.values())
    return total


def summary(states: dict[int, dict], processes: int | None, exit_codes: list[int | None]) -> str:
    """The one line after a run the guard found nothing wrong with ("" when there is nothing to say)."""
    n = compared(states, processes)
    bad = [c for c in exit_codes if c]
    tail = f" (the program exited with status {bad[0]})" if bad else ""
    if processes is None:
        st = next(iter(states.values()), None)
        if st is None or n is None:
            return "" if bad else "mcjax-guard: nothing compared: the process never joined a multi-process JAX job"
        # Several states: workers the program started itself (a test harness, multiprocessing).
        who = (f"process {st.get('p', '?')}" if len(states) == 1
               else f"processes {', '.join(str(p) for p in sorted(states))}") + f" of {st.get('n', '?')}"
        if n == 0:
            return f"mcjax-guard: {who}, no cross-process computation ran: nothing compared{tail}"
        return f"mcjax-guard: {who}, {n:,} dispatches compared, no divergence{tail}"
    if n is None:  # (after a failure before any process joined, the program's own error says it all)
        return "" if bad else (f"mcjax-guard: {processes} process{'es' if processes != 1 else ''}, nothing compared: "
                               f"no process joined a multi-process JAX job (jax.distributed.initialize() over 2 or "
                               f"more processes)")
    if n == 0:
        return f"mcjax-guard: {processes} processes, no cross-process computation ran: nothing compared{tail}"
    return f"mcjax-guard: {processes} processes, {n:,} dispatches compared, no divergence{tail}"


class StatusLine:
    """The live line on a terminal: processes alive, dispatches compared, last agreement. Output
    of the guarded processes goes through `write` so it scrolls above the line."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._lock = threading.Lock()
        self._live: Any = None
        self._last_n: int | None = None
        self._agreed_at: float | None = None

    def start(self) -> None:
        if not self.enabled:
            return
        from rich.console import Console
        from rich.live import Live

        self._live = Live("", console=Console(stderr=True), transient=True, auto_refresh=False,
                          redirect_stdout=False, redirect_stderr=False)
        self._live.start()

    def update(self, alive: int, total: int, states: dict[int, dict], expected: int | None) -> None:
        n = compared(states, expected)
        now = time.monotonic()
        if n is not None and n != self._last_n:
            self._last_n, self._agreed_at = n, now
        if self._live is None:
            return
        from rich.text import Text

        if n is None:
            text = f"mcjax-guard: {alive}/{total} alive · waiting for jax.distributed.initialize()"
        else:
            ago = "" if self._agreed_at is None else f" · last agreement {now - self._agreed_at:.1f} s ago"
            text = f"mcjax-guard: {alive}/{total} alive · {n:,} dispatches compared{ago}"
        with self._lock:
            if self._live is not None:  # one line, cut to the terminal's width
                self._live.update(Text(text, style="dim", no_wrap=True, overflow="ellipsis"), refresh=True)

    def write(self, dst: TextIO, text: str) -> None:
        """A guarded process's output line: above the live line, else straight to `dst`."""
        with self._lock:
            if self._live is not None:
                from rich.text import Text

                self._live.console.print(Text(text.rstrip("\n")), soft_wrap=True, highlight=False)
                return
        dst.write(text)
        dst.flush()

    def stop(self) -> None:
        with self._lock:
            live, self._live = self._live, None
        if live is not None:
            try:
                live.stop()
            except Exception:
                pass


def use_live_line(quiet: bool) -> bool:
    return not quiet and sys.stderr.isatty() and sys.stdout.isatty()
