"""Across hosts: a second "host" (a separate process running the remote sender) collects the stacks of
its own JAX processes and ships them to the collector on the process-0 host; one report covers
every process, a host that never answers is listed as missing after the deadline, a wrong token is
refused, an unreachable collector fails fast."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import grpc
import pytest

from runtime_guard.postmortem import build_postmortem_report
from runtime_guard.report.model import ProcessReport
from runtime_guard.stacks import collect_stacks
from runtime_guard.stacks.frames import short_path
from runtime_guard.stacks.remote import StackCollectorServer, bind_host_for, send_stacks

from .conftest import PROGRAM, free_port, point_line

pytestmark = pytest.mark.slow
TOKEN = "job-token-" + os.urandom(8).hex()


def test_one_report_covers_processes_on_two_hosts(hang_job):
    job = hang_job("sleep", n=3, odd=1)
    server = StackCollectorServer(bind_host_for("127.0.0.1:1234"), TOKEN)
    try:
        # "host-b" runs processes 1 and 2: its supervisor collects and sends their stacks.
        targets = [f"{i}:{pid}:{fb}" for i, pid, fb in job.targets[1:]]
        sender = subprocess.Popen(
            [sys.executable, "-m", "runtime_guard.stacks.remote", "send", "--address", server.address,
             "--host", "host-b", "--report-id", "hang-7", "--snapshots", "2", "--interval", "1",
             *[x for t in targets for x in ("--target", t)]],
            env=dict(os.environ, MCJAX_JOB_TOKEN=TOKEN), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        # This host runs process 0; "host-c" never answers.
        local = collect_stacks(job.targets[:1], native="first", snapshots=2, interval=1.0)
        t0 = time.monotonic()
        received, missing = server.wait("hang-7", ["host-b", "host-c"], deadline_s=7.0)
        waited = time.monotonic() - t0
        out, err = sender.communicate(timeout=60)
    finally:
        server.stop()
    assert sender.returncode == 0, err
    assert missing == ["host-c"] and 6.5 <= waited <= 9.0, (missing, waited)
    assert sorted(p.process_index for p in received["host-b"]) == [1, 2]
    procs = [ProcessReport(0, pid=job.procs[0].pid, host="host-a")] + received["host-b"]
    report = build_postmortem_report("hang", procs, local, missing_hosts=missing)
    job.kill()

    assert report.merged_stacks["outliers"] == [1], report.summary
    assert f"process 1 is not where the others are: at {short_path(str(PROGRAM))}:{point_line('sleep-odd')}" in report.summary
    assert {p.process_index: p.host for p in report.processes} == {0: "host-a", 1: "host-b", 2: "host-b"}
    assert all(len(p.snapshots) == 2 for p in report.processes)
    assert any("host host-c did not send its stacks" in n for n in report.notes)


def test_wrong_token_is_refused_and_unreachable_collector_fails_fast():
    server = StackCollectorServer("127.0.0.1", TOKEN)
    try:
        with pytest.raises(grpc.RpcError) as e:
            send_stacks(server.address, "not-the-token", "host-x", "r1", [ProcessReport(0)], timeout=5)
        assert e.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert send_stacks(server.address, TOKEN, "host-x", "r1", [ProcessReport(0)], timeout=5) == 1
        received, missing = server.wait("r1", ["host-x"], deadline_s=5)
        assert list(received) == ["host-x"] and missing == []
        # Bad payloads are refused with a clear error, and lose nothing already received.
        with grpc.insecure_channel(server.address) as ch:
            with pytest.raises(grpc.RpcError) as e:
                ch.unary_unary("/mcjax.StackCollector/Submit")(b"{not json", timeout=5, metadata=(("mcjax-token", TOKEN),))
            assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert list(server.wait("r1", ["host-x"], deadline_s=0)[0]) == ["host-x"]
    finally:
        server.stop()
    t0 = time.monotonic()
    with pytest.raises(grpc.RpcError) as e:
        send_stacks(f"127.0.0.1:{free_port()}", TOKEN, "host-x", "r2", [ProcessReport(0)], timeout=1.5)
    assert e.value.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
    assert time.monotonic() - t0 < 5


def test_liveness_notes_reach_the_collector_and_bring_back_the_verdict():
    """Other hosts' supervisors note which of their processes run; once process 0's host has a
    verdict, the reply carries it (a host whose own process is frozen learns it this way)."""
    from runtime_guard.stacks.remote import AliveSender

    server = StackCollectorServer(bind_host_for("127.0.0.1:1234"), TOKEN)
    good, bad = AliveSender(server.address, TOKEN), AliveSender(server.address, "not-the-token")
    try:
        def settle(sender):
            deadline = time.monotonic() + 10
            while sender._busy.locked() and time.monotonic() < deadline:
                time.sleep(0.02)

        before = time.monotonic()
        good.send([1, 3])
        settle(good)
        assert good.last_error is None and good.verdict is None
        seen = server.alive_times()
        assert set(seen) == {1, 3} and all(before <= t <= time.monotonic() for t in seen.values()), seen

        bad.send([2])
        settle(bad)
        assert bad.last_error is not None and bad.last_error.startswith("PERMISSION_DENIED"), bad.last_error
        assert 2 not in server.alive_times()

        # A process's end is said outright (silence is not death: notes may come late).
        assert server.gone_times() == {}
        good.send([1], gone=[3])
        settle(good)
        assert set(server.alive_times()) == {1, 3} and set(server.gone_times()) == {3}, server.gone_times()
        # Even while another note is in flight.
        with good._busy:
            t = good.send([], gone=[1, 3], force=True)
            assert good.send([1]) is None  # an ordinary note is skipped
        t.join(10)
        assert set(server.gone_times()) == {1, 3}

        server.set_verdict({"kind": "missing", "seq": 11, "summary": "process 1 never joined #11"})
        good.send([1, 3])
        settle(good)
        assert good.verdict is not None and good.verdict["kind"] == "missing" and good.verdict["seq"] == 11
    finally:
        good.close()
        bad.close()
        server.stop()
