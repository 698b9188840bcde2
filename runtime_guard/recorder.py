"""The hot path: number every cross-process dispatch and fold its identity into a rolling hash.

`record()` runs on every cross-process dispatch, so it does as little as possible: a lock, two
integer operations and seven slots of a preallocated ring overwritten in place. Nothing it keeps
is a new container object: a ring of tuples would put tens of thousands of long-lived objects
under the cyclic garbage collector, whose full passes then cost more than the recording itself.
Names, call-site text, signatures and the exchange with other processes are all done later by
the background thread, from the ring.
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
_RING_MASK = RING - 1
_W = 7  # slots per record in the flat ring
FINE, COARSE = 16, 1024  # checkpoint strides of the rolling hash (powers of two)
_FINE_MASK, _COARSE_MASK = FINE - 1, COARSE - 1
CHECKPOINTS = 256  # checkpoints kept per stride
_monotonic = time.monotonic


class Record(NamedTuple):
    """A dispatch record as readers see it."""

    seq: int
    key: int  # stable identity of what was dispatched (jit function or exact executable)
    h: int  # rolling hash after this dispatch
    exact: int  # exact executable signature when known for this very call, else 0
    code: CodeType | None  # call site: code object and line (text resolved lazily)
    line: int
    t: float  # monotonic time, in the flight recorder only (0 in the in-memory ring)


def fold(h: int, key: int) -> int:
    return ((h ^ key) * _PRIME) & _MASK


class Recorder:
    def __init__(self, flight: "FlightRecorder | None" = None) -> None:
        self.flight = flight
        self.lock = threading.Lock()
        self.seq = 0
        self.h = 0
        self._ring: list = [0] * (RING * _W)  # record of seq s at slots [(s % RING) * 7, +7)
        self.fine: deque[tuple[int, int]] = deque(maxlen=CHECKPOINTS)
        self.coarse: deque[tuple[int, int]] = deque(maxlen=CHECKPOINTS)
        # Records up to here are settled: a record with no exact signature at or below this seq
        # was a cache hit; above it, the call may still be compiling (signature not attached yet).
        self.settled = 0

    def record(self, key: int, exact: int, code: CodeType | None, line: int) -> int:
        # No clock read here: progress over time is observed by the background thread instead.
        t = 0.0
        with self.lock:
            seq = self.seq = self.seq + 1
            h = self.h = ((self.h ^ key) * _PRIME) & _MASK
            b = (seq & _RING_MASK) * _W
            self._ring[b:b + _W] = (seq, key, h, exact, code, line, t)
            if not seq & _FINE_MASK:
                self.fine.append((seq, h))
                if not seq & _COARSE_MASK:
                    self.coarse.append((seq, h))
            fl = self.flight
            if fl is not None:
                fl.write(seq, key, h, exact, fl.site_id(code) if code is not None else 0, line, _monotonic())
        return seq

    def _get(self, seq: int) -> Record | None:
        """The record of dispatch `seq` if still in the ring (caller holds the lock)."""
        if seq < 1 or seq > self.seq or seq <= self.seq - RING:
            return None
        b = (seq & _RING_MASK) * _W
        r = Record._make(self._ring[b:b + _W])
        return r if r.seq == seq else None

    def set_exact(self, seq: int, exact: int) -> None:
        """Attach the executable's signature to a dispatch recorded before it was known."""
        with self.lock:
            r = self._get(seq)
            if r is None:
                return
            self._ring[(seq & _RING_MASK) * _W + 3] = exact
            if self.flight is not None:
                code = r.code
                self.flight.write(r.seq, r.key, r.h, exact, self.flight.site_id(code) if code is not None else 0,
                                  r.line, r.t)

    def undo(self, seq: int) -> bool:
        """Take back the last dispatch (it turned out to run on this process only). Only the most
        recent record can be taken back."""
        with self.lock:
            if self.seq != seq or self._get(seq) is None:
                return False
            prev = self._get(seq - 1)
            self._ring[(seq & _RING_MASK) * _W] = 0
            self.seq = seq - 1
            self.h = prev.h if prev is not None else 0
            if not seq & _FINE_MASK and self.fine and self.fine[-1][0] == seq:
                self.fine.pop()
                if not seq & _COARSE_MASK and self.coarse and self.coarse[-1][0] == seq:
                    self.coarse.pop()
            if self.flight is not None:
                self.flight.rewind(self.seq)
            return True

    def snapshot(self, recent: int) -> tuple[int, int, list[Record], list[tuple[int, int]], list[tuple[int, int]]]:
        """(seq, h, last `recent` records, fine checkpoints, coarse checkpoints), consistent."""
        with self.lock:
            tail = [r for s in range(max(1, self.seq - recent + 1), self.seq + 1) if (r := self._get(s)) is not None]
            return self.seq, self.h, tail, list(self.fine), list(self.coarse)

    def records(self, first: int, last: int) -> list[Record]:
        """Records with first <= seq <= last that are still in the ring."""
        with self.lock:
            lo, hi = max(first, 1, self.seq - RING + 1), min(last, self.seq)
            return [r for s in range(lo, hi + 1) if (r := self._get(s)) is not None]
