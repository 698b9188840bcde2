"""The hot path: number every cross-process dispatch and fold its identity into a rolling hash.

`record()` runs on every cross-process dispatch, so it does as little as possible: a lock, two
integer operations and one `struct.pack_into` of a fixed 48-byte record into a preallocated ring.
That ring *is* the flight recorder's memory-mapped file when there is one (so the record a dead
process leaves on disk costs nothing extra), else a bytearray. Nothing recorded is a new
long-lived Python object: a ring of tuples would put tens of thousands of them under the cyclic
garbage collector, whose full passes then cost more than the recording itself. Call sites are
small integers (a code object's first use numbers it); names, call-site text, signatures and the
exchange with other processes are all done later by the background thread, from the ring.
"""

from __future__ import annotations

import struct
import threading
import time
from collections import deque
from types import CodeType
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from runtime_guard.flight import FlightRecorder

_MASK = (1 << 64) - 1
_PRIME = 0x100000001B3

RING = 1 << 16  # dispatch records kept (answers "what was your dispatch #N?"); the flight file's too
_RING_MASK = RING - 1
# seq, key, rolling hash, exact signature, call-site id, line, monotonic time (the flight format)
RECORD = struct.Struct("<qQQQiid")
_SIZE = RECORD.size
_SEQ = struct.Struct("<q")
_EXACT = struct.Struct("<Q")
_EXACT_OFFSET = 24
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
    t: float  # monotonic time of the dispatch


def fold(h: int, key: int) -> int:
    return ((h ^ key) * _PRIME) & _MASK


class Recorder:
    def __init__(self, flight: "FlightRecorder | None" = None) -> None:
        self.flight = flight
        self.lock = threading.Lock()
        # The hot path takes the lock by its bound methods in a try/finally: `with lock:` costs
        # ~275 ns on CPython 3.11 (~200 on 3.12) against ~90 for acquire() + release().
        self._acquire, self._release = self.lock.acquire, self.lock.release
        self.seq = 0
        self.h = 0
        if flight is not None and flight.capacity == RING:
            self._buf, self._base = flight.records, flight.records_offset
        else:
            self.flight = None
            self._buf, self._base = bytearray(RING * RECORD.size), 0
        self._pack = RECORD.pack_into
        self._codes: list[CodeType | None] = [None]  # call-site id -> code object (0: none)
        # Keyed by id(): a code object's own hash walks its bytecode and constants on every
        # lookup (0.1-0.5 µs); `_codes` keeps each one alive, so its id stays its own.
        self._site_ids: dict[int, int] = {}
        self.fine: deque[tuple[int, int]] = deque(maxlen=CHECKPOINTS)
        self.coarse: deque[tuple[int, int]] = deque(maxlen=CHECKPOINTS)
        # Records up to here are settled: a record with no exact signature at or below this seq
        # was a cache hit; above it, the call may still be compiling (signature not attached yet).
        self.settled = 0

    def _offset(self, seq: int) -> int:
        return self._base + (seq & _RING_MASK) * _SIZE

    def _new_site(self, code: CodeType) -> int:
        with self.lock:
            sid = self._site_ids.get(id(code))
            if sid is None:
                sid = self._site_ids[id(code)] = len(self._codes)
                self._codes.append(code)
                if self.flight is not None:
                    self.flight.side({"site": sid, "file": code.co_filename, "function": code.co_name})
        return sid

    def site_of(self, code: CodeType | None) -> int:
        """The call-site id of a code object (0: none), numbering it on first use."""
        if code is None:
            return 0
        return self._site_ids.get(id(code)) or self._new_site(code)

    def code_of(self, site: int) -> CodeType | None:
        return self._codes[site] if 0 <= site < len(self._codes) else None

    def record(self, key: int, exact: int, code: CodeType | None, line: int) -> int:
        site = self._site_ids.get(id(code), 0) if code is not None else 0
        if not site and code is not None:
            site = self._new_site(code)
        return self.record_at(key, exact, site, line)

    def record_at(self, key: int, exact: int, site: int, line: int) -> int:
        """`record` with the call site already numbered (`site_of`): the jit wrapper's hot path."""
        self._acquire()
        try:
            seq = self.seq = self.seq + 1
            h = self.h = ((self.h ^ key) * _PRIME) & _MASK
            self._pack(self._buf, self._base + (seq & _RING_MASK) * _SIZE, seq, key, h, exact, site, line, _monotonic())
            if not seq & _FINE_MASK:
                self.checkpoint(seq, h)
        finally:
            self._release()
        return seq

    def checkpoint(self, seq: int, h: int) -> None:
        """Keep (seq, hash) at every FINE-th dispatch (caller holds the lock; seq % FINE == 0)."""
        self.fine.append((seq, h))
        if not seq & _COARSE_MASK:
            self.coarse.append((seq, h))

    def _get(self, seq: int) -> Record | None:
        """The record of dispatch `seq` if still in the ring (caller holds the lock)."""
        if seq < 1 or seq > self.seq or seq <= self.seq - RING:
            return None
        s, key, h, exact, site, line, t = RECORD.unpack_from(self._buf, self._offset(seq))
        if s != seq:
            return None
        return Record(s, key, h, exact, self.code_of(site), line, t)

    def set_exact(self, seq: int, exact: int) -> None:
        """Attach the executable's signature to a dispatch recorded before it was known."""
        with self.lock:
            if self._get(seq) is not None:
                _EXACT.pack_into(self._buf, self._offset(seq) + _EXACT_OFFSET, exact)

    def undo(self, seq: int) -> bool:
        """Take back the last dispatch (it turned out to run on this process only). Only the most
        recent record can be taken back."""
        with self.lock:
            if self.seq != seq or self._get(seq) is None:
                return False
            prev = self._get(seq - 1)
            _SEQ.pack_into(self._buf, self._offset(seq), 0)  # the slot no longer holds a record
            self.seq = seq - 1
            self.h = prev.h if prev is not None else 0
            if not seq & _FINE_MASK and self.fine and self.fine[-1][0] == seq:
                self.fine.pop()
                if not seq & _COARSE_MASK and self.coarse and self.coarse[-1][0] == seq:
                    self.coarse.pop()
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
