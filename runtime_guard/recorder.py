"""The hot path: number every cross-process dispatch and fold its identity into a rolling hash.

`record()` runs on every cross-process dispatch, so it does as little as possible: a lock, two
integer operations and a tuple appended to a bounded ring. Names, call-site text, signatures and
the exchange with other processes are all done later by the background thread, from the ring.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from types import CodeType
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from runtime_guard.flight import FlightRecorder

_MASK = (1 << 64) - 1
_PRIME = 0x100000001B3

RING = 1 << 16  # dispatch records kept locally (answers "what was your dispatch #N?")
FINE, COARSE = 16, 1024  # checkpoint strides of the rolling hash (powers of two)
_FINE_MASK, _COARSE_MASK = FINE - 1, COARSE - 1
CHECKPOINTS = 256  # checkpoints kept per stride
_monotonic = time.monotonic


class Record(NamedTuple):
    """A dispatch record as readers see it (the ring itself holds plain tuples, for speed)."""

    seq: int
    key: int  # stable identity of what was dispatched (jit function or exact executable)
    h: int  # rolling hash after this dispatch
    exact: int  # exact executable signature when known for this very call, else 0
    code: CodeType | None  # call site: code object and line (text resolved lazily)
    line: int
    t: float


def fold(h: int, key: int) -> int:
    return ((h ^ key) * _PRIME) & _MASK


class Recorder:
    def __init__(self, flight: "FlightRecorder | None" = None) -> None:
        self.flight = flight
        self.lock = threading.Lock()
        self.seq = 0
        self.h = 0
        self.ring: deque[tuple] = deque(maxlen=RING)
        self.fine: deque[tuple[int, int]] = deque(maxlen=CHECKPOINTS)
        self.coarse: deque[tuple[int, int]] = deque(maxlen=CHECKPOINTS)
        self.last_time = 0.0
        # Records up to here are settled: a record with no exact signature at or below this seq
        # was a cache hit; above it, the call may still be compiling (signature not attached yet).
        self.settled = 0
        self.changed = threading.Event()

    def record(self, key: int, exact: int, code: CodeType | None, line: int) -> int:
        # Plain tuples and bit tests: this runs on every cross-process dispatch.
        t = _monotonic()
        with self.lock:
            seq = self.seq = self.seq + 1
            h = self.h = ((self.h ^ key) * _PRIME) & _MASK
            self.ring.append((seq, key, h, exact, code, line, t))
            if not seq & _FINE_MASK:
                self.fine.append((seq, h))
                if not seq & _COARSE_MASK:
                    self.coarse.append((seq, h))
            self.last_time = t
            fl = self.flight
            if fl is not None:
                fl.write(seq, key, h, exact, fl.site_id(code) if code is not None else 0, line, t)
        return seq

    def set_exact(self, seq: int, exact: int) -> None:
        """Attach the executable's signature to a dispatch recorded before it was known."""
        with self.lock:
            for i in range(len(self.ring) - 1, max(-1, len(self.ring) - 9), -1):
                r = Record._make(self.ring[i])
                if r.seq == seq:
                    r = r._replace(exact=exact)
                    self.ring[i] = tuple(r)
                    if self.flight is not None:
                        code = r.code
                        self.flight.write(r.seq, r.key, r.h, exact,
                                          self.flight.site_id(code) if code is not None else 0, r.line, r.t)
                    return

    def undo(self, seq: int) -> bool:
        """Take back the last dispatch (it turned out to run on this process only). Only the most
        recent record can be taken back."""
        with self.lock:
            if self.seq != seq or not self.ring or self.ring[-1][0] != seq:
                return False
            self.ring.pop()
            self.seq = seq - 1
            self.h = self.ring[-1][2] if self.ring else 0
            if not seq % FINE and self.fine and self.fine[-1][0] == seq:
                self.fine.pop()
                if not seq % COARSE and self.coarse and self.coarse[-1][0] == seq:
                    self.coarse.pop()
            if self.flight is not None:
                self.flight.rewind(self.seq)
            return True

    def snapshot(self, recent: int) -> tuple[int, int, list[Record], list[tuple[int, int]], list[tuple[int, int]]]:
        """(seq, h, last `recent` records, fine checkpoints, coarse checkpoints), consistent."""
        with self.lock:
            n = len(self.ring)
            tail = [Record._make(self.ring[i]) for i in range(max(0, n - recent), n)]
            return self.seq, self.h, tail, list(self.fine), list(self.coarse)

    def records(self, first: int, last: int) -> list[Record]:
        """Records with first <= seq <= last that are still in the ring."""
        with self.lock:
            if not self.ring:
                return []
            base = self.ring[0][0]
            lo = max(first, base) - base
            hi = min(last, self.seq) - base
            return [Record._make(self.ring[i]) for i in range(lo, hi + 1)] if hi >= lo else []
