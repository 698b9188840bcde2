"""A flight recorder: every cross-process dispatch written to a memory-mapped ring file.

The file outlives the process. When a process dies in the middle of a collective (gloo aborts a
process on a size mismatch within milliseconds; a user may `kill -9`), its last dispatches are
still on disk, so the supervisor can compare what every process did up to the end, even though the
coordination service (which lives in process 0) may have died with it.

Layout: a 64-byte header (magic, capacity, pid, process index, last seq whose rolling hash is
filled in: the recorder folds the hash in batches, so a reader folds the records after it) then `capacity` fixed 48-byte
records at slot `seq % capacity`, written in place by the `Recorder` (this mapping is its ring, so
the file costs the hot path nothing). The last dispatch is the slot with the highest seq (an undone
record's slot is zeroed). Names of computations, call sites and signatures are rare and go to a
JSON-lines side file.

Computations over a subset of the processes (a pipeline stage's sub-mesh) are numbered in their
own stream: each stream has its own ring file, `flight-<pid>.s<members joined by ->.bin`, whose
names and call sites are in the process's one side file.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import struct
import threading
from pathlib import Path
from typing import Any

from runtime_guard.recorder import RECORD, RING, fold

MAGIC = b"MCJXFR02"  # 02: polynomial rolling hash, folded in batches
HEADER = struct.Struct("<8sqqqq24x")  # magic, capacity, pid, process index, last folded seq
_FOLDED = struct.Struct("<q")
_FOLDED_OFFSET = 32
CAPACITY = RING


_NAME = re.compile(r"flight-(\d+)(?:\.s(\d+(?:-\d+)*))?\.bin$")


def subset_of(path: str | os.PathLike[str]) -> tuple[int, ...] | None:
    """The subset of processes a flight file's stream runs over; None for the main stream (and for
    a file that is not a flight file)."""
    m = _NAME.search(os.fspath(path))
    return tuple(int(x) for x in m.group(2).split("-")) if m and m.group(2) else None


class FlightRecorder:
    def __init__(self, directory: str | os.PathLike[str], capacity: int = CAPACITY,
                 subset: tuple[int, ...] | None = None) -> None:
        """`subset`: the ring of the stream of computations over these processes, whose side
        entries (names, call sites) go to the process's main side file."""
        d = Path(directory)
        d.mkdir(parents=True, exist_ok=True)
        tag = f".s{'-'.join(map(str, subset))}" if subset else ""
        self.path = d / f"flight-{os.getpid()}{tag}.bin"
        self.side_path = d / f"flight-{os.getpid()}.jsonl"
        self.capacity = capacity
        size = HEADER.size + capacity * RECORD.size
        with open(self.path, "wb") as f:
            f.truncate(size)
        self._fd = os.open(self.path, os.O_RDWR)
        self._map = mmap.mmap(self._fd, size)
        HEADER.pack_into(self._map, 0, MAGIC, capacity, os.getpid(), -1, 0)
        # A subset's ring writes no side entries (its recorder shares the main one's site table).
        self._side = None if subset else open(self.side_path, "a", buffering=1)  # noqa: SIM115 - kept for the process lifetime
        self._side_lock = threading.Lock()
        self.records = self._map  # the Recorder's ring
        self.records_offset = HEADER.size

    def set_process(self, index: int) -> None:
        struct.pack_into("<q", self._map, 24, index)

    def set_folded(self, seq: int) -> None:
        """Records up to `seq` carry their rolling hash; a reader folds the ones after it."""
        _FOLDED.pack_into(self._map, _FOLDED_OFFSET, seq)

    def side(self, entry: dict) -> None:
        if self._side is None:
            return
        with self._side_lock:
            self._side.write(json.dumps(entry, separators=(",", ":")) + "\n")

    def detach_in_child(self, keep_file: bool) -> None:
        """In a forked child, whose mapping is still the parent's file: map, at the same address
        (so the recorder's ring and the C hot path follow without knowing), a file of the child's
        own holding a copy (its pid in the header, a copy of the side file); without `keep_file`,
        private memory that no file or reader sees (a fork that is not a process of the job)."""
        import ctypes
        import shutil

        MAP_FIXED = 0x10  # same value on Linux and macOS; the mmap module does not export it
        size = len(self._map)
        content = bytes(self._map)
        holder = (ctypes.c_char * size).from_buffer(self._map)
        addr = ctypes.addressof(holder)
        del holder
        pid = os.getpid()
        fd, path = -1, self.path
        if keep_file:
            path = self.path.with_name(f"flight-{pid}.{self.path.name.split('.', 1)[1]}")
            with open(path, "wb") as f:
                # (a parent outside any job recorded nothing: a header and a sparse rest)
                f.write(content if content.count(0, HEADER.size) < size - HEADER.size else content[:HEADER.size])
                f.truncate(size)
            fd = os.open(path, os.O_RDWR)
            flags = mmap.MAP_SHARED | MAP_FIXED
        else:
            flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | MAP_FIXED
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        if libc.mmap(addr, size, mmap.PROT_READ | mmap.PROT_WRITE, flags, fd, 0) != addr:
            raise OSError(ctypes.get_errno(), "cannot remap the flight recorder in a forked child")
        if not keep_file:
            self._map[:] = content
        struct.pack_into("<q", self._map, 16, pid)
        os.close(self._fd)
        self._fd, self.path = (fd if keep_file else os.open(os.devnull, os.O_RDONLY)), path
        if self._side is not None:
            self._side_lock = threading.Lock()  # the parent's may have been held at the fork
            self._side = None
            if keep_file:
                side_path = self.side_path.with_name(f"flight-{pid}.jsonl")
                try:
                    shutil.copyfile(self.side_path, side_path)
                except OSError:
                    pass
                self.side_path = side_path
                self._side = open(side_path, "a", buffering=1)  # noqa: SIM115 - kept for the process lifetime


def read(path: str | os.PathLike[str]) -> dict[str, Any]:
    """{pid, process, subset, seq, records: [{seq, key, h, exact, file, line, function, name,
    fields}], ...} in seq order, from a flight file (of a live or dead process). `subset`: the
    processes its stream runs over, None for the main stream."""
    p = Path(path)
    data = p.read_bytes()
    magic, capacity, pid, process, folded = HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise ValueError(f"{p} is not an mcjax flight record")
    slots = list(RECORD.iter_unpack(data[HEADER.size:HEADER.size + capacity * RECORD.size]))
    last = max((r[0] for r in slots), default=0)
    sites: dict[int, dict] = {}
    names: dict[int, str] = {}
    fields: dict[int, dict] = {}
    exact_for_key: dict[int, int] = {}
    side = p.with_name(f"flight-{pid}.jsonl")
    if side.exists():
        for line in side.read_text().splitlines():
            try:
                e = json.loads(line)
            except ValueError:
                continue  # a line cut by a kill
            if "site" in e:
                sites[e["site"]] = e
            elif "name" in e:
                names[int(e["key"])] = e["name"]
            elif "fields" in e:
                fields[int(e["exact"])] = e["fields"]
    recs = []
    # Records after the last fold carry no hash yet: continue the fold from the one before.
    prev: tuple[int, int | None] = (0, 0)  # (seq, rolling hash after it)
    for seq in range(max(1, last - capacity + 1), last + 1):
        s, key, h, exact, site, line, t = slots[seq % capacity]
        if s != seq:
            continue
        if seq > folded:
            h = fold(prev[1], key) if prev[0] == seq - 1 and prev[1] is not None else None
        prev = (seq, h)
        if exact:
            exact_for_key[key] = exact
        st = sites.get(site, {})
        recs.append({"seq": s, "key": key, "h": h, "exact": exact, "file": st.get("file", ""), "line": line,
                     "function": st.get("function", ""), "name": names.get(key, "?"), "t": t,
                     "fields": fields.get(exact or exact_for_key.get(key, 0), {}),
                     "cached": not exact and bool(exact_for_key.get(key))})
    return {"pid": pid, "process": process, "subset": subset_of(p), "seq": last, "records": recs}
