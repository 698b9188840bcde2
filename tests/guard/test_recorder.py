"""The recorder's ring and the flight file it writes in place agree: what a dead process leaves on
disk is what the guard recorded (sequence, identity, rolling hash, call site, exact signature)."""

from __future__ import annotations

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
