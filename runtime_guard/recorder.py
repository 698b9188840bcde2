"""The hot path: number every cross-process dispatch and write it into a preallocated ring.

`record_at()` runs on every cross-process dispatch, so it does as little as possible: a lock, one
integer increment and one `struct.pack_into` of a fixed 48-byte record into the ring. That ring
*is* the flight recorder's memory-mapped file when there is one (so the record a dead process
leaves on disk costs nothing extra), else a bytearray. Nothing recorded is a new long-lived Python
object: a ring of tuples would put tens of thousands of them under the cyclic garbage collector,
whose full passes then cost more than the recording itself. Call sites are small integers (a code
object's first use numbers it).

The rolling hash over the dispatch identities is not computed on the hot path: readers (the
exchange thread, 4 times a second) fold the new records in one vectorized numpy pass and write
each record's hash into its slot. A Python fold costs ~0.3 µs a record wherever it runs (a
background thread holds the same GIL), the numpy pass a few ns. The hash is polynomial,
H(n) = H(n-1)·P + key(n) mod 2^64, because that form folds as prefix sums. The hot path folds
too, every `_FOLD_EVERY` records, so the ring can never outrun the hash. Likewise the record's
time is the clock of the last fold (to within one publish interval), not a clock read per call.
"""

from __future__ import annotations

import struct
import threading
import time
from collections import deque
from types import CodeType
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

if TYPE_CHECKING:
    from runtime_guard.flight import FlightRecorder

_MASK = (1 << 64) - 1
_PRIME = 0x100000001B3
_INVERSE = pow(_PRIME, -1, 1 << 64)  # P is odd, so it has an inverse modulo 2^64

RING = 1 << 16  # dispatch records kept (answers "what was your dispatch #N?"); the flight file's too
_RING_MASK = RING - 1
# seq, key, rolling hash, exact signature, call-site id, line, monotonic time (the flight format)
RECORD = struct.Struct("<qQQQiid")
_SIZE = RECORD.size
RECORD_DTYPE = np.dtype([("seq", "<i8"), ("key", "<u8"), ("h", "<u8"), ("exact", "<u8"),
                         ("site", "<i4"), ("line", "<i4"), ("t", "<f8")])
assert RECORD_DTYPE.itemsize == _SIZE
_SEQ = struct.Struct("<q")
_EXACT = struct.Struct("<Q")
_EXACT_OFFSET = 24
FINE, COARSE = 16, 1024  # checkpoint strides of the rolling hash (powers of two)
CHECKPOINTS = 256  # checkpoints kept per stride
_FOLD_EVERY = RING // 4  # the hot path folds at every this many records (a power of two)
_FOLD_MASK = _FOLD_EVERY - 1
_monotonic = time.monotonic
_PAGE = 4096  # (a smaller page than the system's only touches some pages twice)


def _powers(base: int, n: int) -> np.ndarray:
    """base^0 .. base^n modulo 2^64 (uint64 arithmetic wraps)."""
    out = np.empty(n + 1, np.uint64)
    out[0] = 1
    out[1:] = base
    return np.cumprod(out, dtype=np.uint64)


_P_POW = _powers(_PRIME, RING)
_Q_POW = _powers(_INVERSE, RING)


class Record(NamedTuple):
    """A dispatch record as readers see it."""

    seq: int
    key: int  # stable identity of what was dispatched (jit function or exact executable)
    h: int  # rolling hash after this dispatch
    exact: int  # exact executable signature when known for this very call, else 0
    code: CodeType | None  # call site: code object and line (text resolved lazily)
    line: int
    t: float  # monotonic time of the dispatch (to within one fold: a publish interval)


def fold(h: int, key: int) -> int:
    """The rolling hash after one more dispatch (the reference for the vectorized fold)."""
    return (h * _PRIME + key) & _MASK


def fold_keys(h: int, keys: np.ndarray) -> np.ndarray:
    """The rolling hash after each of `keys` (uint64, at most RING), starting from `h`.

    H(j) = P^j·h + Σ_{i≤j} k(i)·P^(j-i) = P^j·(h + Σ_{i≤j} k(i)·P^-i), all modulo 2^64."""
    m = len(keys)
    with np.errstate(over="ignore"):
        s = np.cumsum(keys * _Q_POW[1:m + 1], dtype=np.uint64)
        return _P_POW[1:m + 1] * (s + np.uint64(h))


class Recorder:
    # Slots: the jit wrapper's hot path reads eight of these per dispatch.
    __slots__ = ("flight", "lock", "_acquire", "_release", "seq", "_h", "_folded", "now", "_buf", "_base",
                 "_view", "_pack", "_codes", "_site_ids", "_site_owner", "fine", "coarse", "settled")

    def __init__(self, flight: "FlightRecorder | None" = None, sites: "Recorder | None" = None) -> None:
        """`sites`: another recorder whose call-site numbering this one shares (a stream of
        dispatches over a subset of the processes beside the main one)."""
        self.flight = flight
        self.lock = threading.Lock()
        # The C hot path takes the lock through these (in C no signal can strike between them).
        self._acquire, self._release = self.lock.acquire, self.lock.release
        self.seq = 0
        self._h = 0  # rolling hash after dispatch `_folded`
        self._folded = 0
        self.now = _monotonic()  # the time written into records: refreshed at every fold
        if flight is not None and flight.capacity == RING:
            self._buf, self._base = flight.records, flight.records_offset
        else:
            self.flight = None
            self._buf, self._base = bytearray(RING * RECORD.size), 0
        self._view = np.frombuffer(self._buf, RECORD_DTYPE, RING, self._base)
        # Touch every page of the ring now: otherwise the process's resident memory grows by the
        # ring's size (3 MB) over its first 65k dispatches, as each page is first written, which
        # reads as a leak. (Zeros: an empty slot, as before.)
        np.frombuffer(self._buf, np.uint8, RING * _SIZE, self._base)[::_PAGE] = 0
        self._pack = RECORD.pack_into
        self._codes: list[CodeType | None] = [None]  # call-site id -> code object (0: none)
        # Keyed by id(): a code object's own hash walks its bytecode and constants on every
        # lookup (0.1-0.5 µs); `_codes` keeps each one alive, so its id stays its own.
        self._site_ids: dict[int, int] = {}
        self._site_owner = sites
        if sites is not None:
            self._codes, self._site_ids = sites._codes, sites._site_ids
        self.fine: deque[tuple[int, int]] = deque(maxlen=CHECKPOINTS)
        self.coarse: deque[tuple[int, int]] = deque(maxlen=CHECKPOINTS)
        # Records up to here are settled: a record with no exact signature at or below this seq
        # was a cache hit; above it, the call may still be compiling (signature not attached yet).
        self.settled = 0

    def _offset(self, seq: int) -> int:
        return self._base + (seq & _RING_MASK) * _SIZE

    def _new_site(self, code: CodeType) -> int:
        if self._site_owner is not None:
            return self._site_owner._new_site(code)
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
        """`record` with the call site already numbered (`site_of`)."""
        with self.lock:  # not acquire() + try/finally: see GuardedJit.__call__
            seq = self.seq = self.seq + 1
            self._pack(self._buf, self._base + (seq & _RING_MASK) * _SIZE, seq, key, 0, exact, site, line, self.now)
            if not seq & _FOLD_MASK:
                self._fold()
        return seq

    def _fold(self) -> None:
        """Fold the records after `_folded` into the rolling hash, write each one's hash into its
        slot and keep the checkpoints (caller holds the lock)."""
        self.now = _monotonic()
        lo, hi = self._folded + 1, self.seq
        if hi < lo:
            return
        a, b = lo & _RING_MASK, hi & _RING_MASK
        v = self._view
        if a <= b:
            hs = fold_keys(self._h, v["key"][a:b + 1])
            v["h"][a:b + 1] = hs
        else:  # the range wraps around the end of the ring
            hs = fold_keys(self._h, np.concatenate((v["key"][a:], v["key"][:b + 1])))
            v["h"][a:] = hs[:RING - a]
            v["h"][:b + 1] = hs[RING - a:]
        first = (lo + FINE - 1) & ~(FINE - 1)
        for s in range(first, hi + 1, FINE):  # ~N/16 checkpoints per fold, all in order
            hv = int(hs[s - lo])
            self.fine.append((s, hv))
            if not s & (COARSE - 1):
                self.coarse.append((s, hv))
        self._h, self._folded = int(hs[-1]), hi
        if self.flight is not None:
            self.flight.set_folded(hi)

    @property
    def h(self) -> int:
        """The rolling hash after the last dispatch."""
        with self.lock:
            self._fold()
            return self._h

    def _get(self, seq: int) -> Record | None:
        """The record of dispatch `seq` if still in the ring (caller holds the lock; its hash is
        only filled in once folded)."""
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
            if self._folded >= seq:  # a fold came in between: step the hash back one record
                prev = self._get(seq - 1)
                self._folded, self._h = seq - 1, prev.h if prev is not None else 0
                if self.fine and self.fine[-1][0] == seq:
                    self.fine.pop()
                if self.coarse and self.coarse[-1][0] == seq:
                    self.coarse.pop()
                if self.flight is not None:
                    self.flight.set_folded(seq - 1)
            _SEQ.pack_into(self._buf, self._offset(seq), 0)  # the slot no longer holds a record
            self.seq = seq - 1
            self.settled = min(self.settled, seq - 1)  # the next record reuses seq: not settled yet
            return True

    def snapshot(self, recent: int) -> tuple[int, int, list[Record], list[tuple[int, int]], list[tuple[int, int]]]:
        """(seq, h, last `recent` records, fine checkpoints, coarse checkpoints), consistent."""
        with self.lock:
            self._fold()
            tail = [r for s in range(max(1, self.seq - recent + 1), self.seq + 1) if (r := self._get(s)) is not None]
            return self.seq, self._h, tail, list(self.fine), list(self.coarse)

    def records(self, first: int, last: int) -> list[Record]:
        """Records with first <= seq <= last that are still in the ring."""
        with self.lock:
            self._fold()
            lo, hi = max(first, 1, self.seq - RING + 1), min(last, self.seq)
            return [r for s in range(lo, hi + 1) if (r := self._get(s)) is not None]
