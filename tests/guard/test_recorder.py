"""The recorder's ring and the flight file it writes in place agree: what a dead process leaves on
disk is what the guard recorded (sequence, identity, rolling hash, call site, exact signature)."""

from __future__ import annotations

import os
import sys

from runtime_guard import flight
from runtime_guard.recorder import RING, Recorder, fold


def _site():
    return sys._getframe(1).f_code


def test_flight_file_holds_the_records(tmp_path):
    fr = flight.FlightRecorder(tmp_path)
    rec = Recorder(fr)
    code = _site()
    keys = [11, 22, 33, 44]
    seqs = [rec.record(k, 0, code, 100 + i) for i, k in enumerate(keys)]
    rec.set_exact(seqs[1], 999)
    assert rec.undo(seqs[-1]) and not rec.undo(seqs[0])  # only the last can be taken back

    data = flight.read(fr.path)
    assert data["seq"] == 3 == rec.seq
    got = [(r["seq"], r["key"], r["line"], r["exact"], r["function"]) for r in data["records"]]
    assert got == [(1, 11, 100, 0, "test_flight_file_holds_the_records"),
                   (2, 22, 101, 999, "test_flight_file_holds_the_records"),
                   (3, 33, 102, 0, "test_flight_file_holds_the_records")]
    h = 0
    for r, k in zip(data["records"], keys):
        h = fold(h, k)
        assert r["h"] == h
    assert rec.h == h
    assert [r.code for r in rec.records(1, 3)] == [code] * 3


def test_ring_keeps_the_last_RING_records(tmp_path):
    fr = flight.FlightRecorder(tmp_path)
    rec = Recorder(fr)
    n = RING + 100
    h = 0
    for i in range(1, n + 1):
        rec.record(i, 0, None, i % 1000)
        h = fold(h, i)
    assert rec.seq == n and rec.h == h
    assert rec.records(1, 100) == []  # overwritten
    data = flight.read(fr.path)
    assert data["seq"] == n
    assert [r["seq"] for r in data["records"]] == list(range(n - RING + 1, n + 1))
    assert data["records"][-1]["h"] == h


def test_without_a_flight_file_the_ring_is_in_memory():
    rec = Recorder(None)
    code = _site()
    s = rec.record(7, 0, code, 5)
    (r,) = rec.records(s, s)
    assert (r.seq, r.key, r.code, r.line) == (1, 7, code, 5) and r.t > 0


def test_threads_recording_at_once_keep_one_consistent_stream(tmp_path):
    """Several dispatching threads (a prefetch thread's device_put beside the training loop):
    every record gets its own number and the rolling hash folds them in exactly that order. Under
    the GIL few interleavings can break this even without the recorder's lock (the seq update and
    the slot write have no call between them); on free-threaded CPython this is what a missing
    lock breaks."""
    rec = Recorder(flight.FlightRecorder(tmp_path))
    per_thread, threads = 5000, 4
    run_threads_switching_often([lambda t=t: [rec.record_at(1000 * t + i % 7 + 1, 0, 0, t) for i in range(per_thread)]
                                 for t in range(threads)])
    n = per_thread * threads
    assert rec.seq == n
    records = rec.records(1, n)
    assert [r.seq for r in records] == list(range(1, n + 1))
    h = 0
    for r in records:
        h = fold(h, r.key)
        assert r.h == h
    assert rec.h == h
    assert sorted(sum(1 for r in records if r.line == t) for t in range(threads)) == [per_thread] * threads
    # The hash checkpoints are taken under the same lock: in order, each the hash at its record.
    fine = list(rec.fine)
    assert [s for s, _ in fine] == sorted(s for s, _ in fine)
    assert all(records[s - 1].h == hs for s, hs in fine)


def test_a_record_that_fails_leaves_the_recorder_usable(tmp_path):
    rec = Recorder(flight.FlightRecorder(tmp_path))
    import struct

    import pytest

    with pytest.raises(struct.error):
        rec.record_at(1, 0, 0, 2**40)  # a line number the 32-bit field cannot hold
    assert threading_result(lambda: rec.record_at(2, 0, 0, 5)) is not None  # the lock was released


def run_threads_switching_often(targets, timeout: float = 120.0) -> None:
    """Run each target in its own thread, CPython switching between them as often as it allows."""
    import threading

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        ts = [threading.Thread(target=f) for f in targets]
        for t in ts:
            t.start()
        for t in ts:
            t.join(timeout)
    finally:
        sys.setswitchinterval(old)


def threading_result(fn, timeout: float = 5.0):
    """fn() run in a thread; its result, or None if it did not finish (e.g. a lock left held)."""
    import threading

    out = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(timeout)
    return out[0] if out else None


def test_vectorized_fold_is_the_sequential_fold():
    """The readers' numpy fold gives the hash of folding one record at a time, from any start."""
    import numpy as np

    from runtime_guard.recorder import fold_keys

    rng = np.random.default_rng(0)
    keys = rng.integers(0, 2**64, size=5000, dtype=np.uint64)
    for start in (0, 1, 2**64 - 1, 0x1234567890ABCDEF):
        h, want = start, []
        for k in keys.tolist():
            h = fold(h, k)
            want.append(h)
        assert fold_keys(start, keys).tolist() == want


def test_hashes_fold_across_the_ring_end_and_undo_after_a_fold(tmp_path):
    """Records folded in batches that wrap around the ring's end (the hot path folds every
    RING/4 records, readers whenever they look) carry the sequential hash; a record taken back
    after a reader folded it steps the hash back."""
    fr = flight.FlightRecorder(tmp_path)
    rec = Recorder(fr)
    h, hs = 0, {}
    n = RING + RING // 2 + 7
    for i in range(1, n + 1):
        rec.record_at(i * 7919, 0, 0, 1)
        h = hs[i] = fold(h, i * 7919)
        if i % 9999 == 0:
            rec.records(i, i)  # a reader folds in between, at a point unaligned with the ring
    got = rec.records(1, n)
    assert [r.h for r in got] == [hs[r.seq] for r in got] and got[-1].seq == n
    assert all(hs[s] == v for s, v in rec.fine) and all(hs[s] == v for s, v in rec.coarse)
    assert rec.h == hs[n]
    # n is not a multiple of FINE; take back one that is, after a fold saw it.
    last = (n // 16) * 16
    while rec.seq > last:
        assert rec.undo(rec.seq)
    assert rec.fine[-1][0] == last and rec.h == hs[last]
    assert rec.undo(last) and rec.h == hs[last - 1] and rec.fine[-1][0] == last - 16
    rec.record_at(5, 0, 0, 1)
    assert rec.h == fold(hs[last - 1], 5)


def test_a_dead_process_file_gets_hashes_for_records_not_yet_folded(tmp_path):
    """Records written after the last fold (a process killed between two publishes) have no
    hash in their slots; reading the file folds them from the last folded record."""
    fr = flight.FlightRecorder(tmp_path)
    rec = Recorder(fr)
    h = 0
    for i in range(1, 41):
        rec.record_at(i, 0, 0, 1)
        h = fold(h, i)
        if i == 25:
            folded_h = rec.h  # folds up to 25
    data = flight.read(fr.path)
    assert [r["seq"] for r in data["records"]] == list(range(1, 41))
    assert data["records"][24]["h"] == folded_h and data["records"][-1]["h"] == h


def test_a_subset_stream_has_its_own_flight_file_named_by_its_members(tmp_path):
    """A pipeline stage's computations are numbered in their own stream: its ring is a flight file
    of its own, whose call sites and names are in the process's one side file."""
    main = flight.FlightRecorder(tmp_path)
    rec = Recorder(main)
    stage = flight.FlightRecorder(tmp_path, subset=(2, 3))
    stage.set_process(3)
    srec = Recorder(stage, sites=rec)
    code = sys._getframe().f_code
    rec.record(11, 0, code, 7)
    for k in (21, 22, 23):
        srec.record(k, 0, code, 9)
    assert stage.path.name == f"flight-{os.getpid()}.s2-3.bin" and flight.subset_of(stage.path) == (2, 3)
    data = flight.read(stage.path)
    assert data["subset"] == (2, 3) and data["process"] == 3 and data["seq"] == 3
    assert [(r["key"], r["line"], r["function"]) for r in data["records"]] == [(k, 9, code.co_name) for k in (21, 22, 23)]
    assert flight.read(main.path)["subset"] is None and flight.read(main.path)["seq"] == 1
