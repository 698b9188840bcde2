"""Parsers, merge rules and outlier ranking, fast. (The detections themselves are proven on real
hanging JAX processes in test_hang_reports.py / test_guard_e2e.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from runtime_guard.report.model import Frame, StackSnapshot, Thread
from runtime_guard.stacks import collect_stacks
from runtime_guard.stacks.fallback import parse_faulthandler
from runtime_guard.stacks.frames import blocked_on, calls_on_line, is_library, short_path
from runtime_guard.stacks.merge import display_frames, main_thread, merge_stacks, python_key, ranges

SITE = "/opt/venv/lib/python3.11/site-packages"


def test_ranges():
    assert ranges([]) == ""
    assert ranges([3]) == "3"
    assert ranges([0, 1]) == "0,1"
    assert ranges([5, 0, 1, 2, 7, 8, 9, 11]) == "0-2,5,7-9,11"


def test_parse_faulthandler_formats():
    text = textwrap.dedent("""\
        Thread 0x00007f0000000002 (most recent call first):
          File "/app/loader.py", line 12 in fetch
          File "/usr/lib/python3.11/threading.py", line 982 in run

        Current thread 0x00007f0000000001 [python] (most recent call first):
          File "/app/train.py", line 42 in step
          File "/app/train.py", line 57 in <module>
        Thread 0x00007f0000000003 (most recent call first):
          <no Python frame>
        """)
    snap = parse_faulthandler(text, main_thread="0x7f0000000001", taken_at=5.0)
    assert snap.method == "faulthandler" and snap.taken_at == 5.0
    assert [t.name for t in snap.threads] == ["Thread 0x00007f0000000002", "python", "Thread 0x00007f0000000003"]
    main = main_thread(snap)
    assert main is snap.threads[1] and [(f.name, f.line) for f in main.frames] == [("step", 42), ("<module>", 57)]
    assert snap.threads[2].frames == []


def test_pyspy_and_faulthandler_agree_on_a_real_process(tmp_path, monkeypatch):
    """The same live process seen by py-spy and by the faulthandler fallback merges into one class."""
    prog = tmp_path / "worker.py"
    prog.write_text(textwrap.dedent(f"""\
        import sys, threading, time
        sys.path.insert(0, {os.getcwd()!r})
        from runtime_guard.stacks.fallback import install_fallback_dumper
        install_fallback_dumper(sys.argv[1])
        def loader():
            time.sleep(60)
        threading.Thread(target=loader, name="loader", daemon=True).start()
        def step():
            batch_size = 4096
            print("ready", flush=True)
            time.sleep(60)
        step()
        """))
    fb = tmp_path / "stacks.txt"
    p = subprocess.Popen([sys.executable, str(prog), str(fb)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready"
        time.sleep(0.2)
        by_pyspy = collect_stacks([(0, p.pid, str(fb))], snapshots=1)[0]
        monkeypatch.setenv("MCJAX_DISABLE_PYSPY", "1")
        by_fallback = collect_stacks([(1, p.pid, str(fb))], snapshots=1)[1]
        monkeypatch.delenv("MCJAX_DISABLE_PYSPY")
        with_locals = collect_stacks([(2, p.pid, str(fb))], snapshots=1, locals=True)[2]
        assert p.poll() is None
    finally:
        p.kill()
        p.wait(timeout=30)
    assert by_pyspy[0].method == "py-spy" and by_fallback[0].method == "faulthandler"
    a, b = main_thread(by_pyspy[0]), main_thread(by_fallback[0])
    assert python_key(a.frames) == python_key(b.frames)
    assert [f.name for f in a.frames][:2] == ["step", "<module>"]
    merged, per = merge_stacks({0: by_pyspy, 1: by_fallback})
    assert len(merged["classes"]) == 1 and merged["classes"][0]["processes"] == [0, 1]
    assert merged["classes"][0]["category"] == "sleep"
    assert {t.name for t in by_pyspy[0].threads} >= {"MainThread", "loader"}
    # Local variables only when asked for.
    assert all(f.locals is None for t in by_pyspy[0].threads for f in t.frames)
    step = next(f for f in main_thread(with_locals[0]).frames if f.name == "step")
    assert step.locals == {"batch_size": "4096"}


def _snap(*stack: tuple[str, str, int], method: str = "py-spy", native: tuple[str, ...] = ()) -> StackSnapshot:
    frames = [Frame(n, "libx.so", 0, "libx.so", native=True) for n in native]
    frames += [Frame(name, file, line) for name, file, line in stack]  # innermost first
    return StackSnapshot(0.0, method, [Thread(1, "MainThread", frames, active=False, is_main=True)])


def test_library_runs_collapse_but_keep_entry_and_innermost():
    frames = [
        Frame("ExecuteReplicated.__call__", f"{SITE}/jax/_src/interpreters/pxla.py", 395),
        Frame("_pjit_call_impl_python", f"{SITE}/jax/_src/pjit.py", 1190),
        Frame("cache_miss", f"{SITE}/jax/_src/pjit.py", 259),
        Frame("sync_global_devices", f"{SITE}/jax/experimental/multihost_utils.py", 165),
        Frame("train", "/app/train.py", 30),
        Frame("<module>", "/app/train.py", 50),
        Frame("_run_code", "<frozen runpy>", 88),
    ]
    d = display_frames(frames)
    assert [(x.kind, x.name) for x in d] == [("user", "<module>"), ("user", "train"), ("library", "sync_global_devices")]
    assert d[-1].inner.name == "ExecuteReplicated.__call__" and d[-1].hidden == 2
    assert [x.name for x in display_frames(frames, collapse=False)][0] == "_run_code"
    assert is_library(frames[-1]) and not is_library(frames[4])
    assert short_path(f"{SITE}/jax/_src/pjit.py") == "jax/_src/pjit.py"


@pytest.mark.parametrize(
    "native,source,expect",
    [
        (("pthread_cond_timedwait", "gloo::allreduce", "PjitFunction::Call"), "", ("collective", "a collective (gloo all-reduce)")),
        (("syscall", "xla::CoordinationServiceAgent::WaitAtBarrier"), "", ("barrier", "a coordination-service barrier (wait_at_barrier)")),
        (("clock_nanosleep", "time_sleep"), "", ("sleep", "time.sleep")),
        ((), "time.sleep(3600)  # stuck loader", ("sleep", "time.sleep")),
        ((), "jax.block_until_ready(w)", ("device-wait", "block_until_ready")),
        ((), "q.join()", ("lock", "a lock or thread (q.join)")),
        ((), "x = compute(y)", ("unknown", "")),
    ],
)
def test_blocked_on(tmp_path, native, source, expect):
    src = tmp_path / "prog.py"
    src.write_text("import time\n" + (source or "step()") + "\n")
    frames = [Frame(n, "libx.so", 0, "libx.so", native=True) for n in native] + [Frame("<module>", str(src), 2)]
    b = blocked_on(frames)
    assert (b.category, b.what) == expect


def test_a_process_in_the_guards_exit_path_is_leaving_whatever_it_waits_on():
    # A survivor whose collective with a dead process failed: its program has left, and the guard's
    # final comparison round waits on an event (a died report once called it "a lock or condition").
    frames = [
        Frame("Condition.wait", "/usr/lib/python3.11/threading.py", 331),
        Frame("Event.wait", "/usr/lib/python3.11/threading.py", 629),
        Frame("Exchange._final_round", f"{SITE}/runtime_guard/exchange.py", 184),
        Frame("Exchange.mark_exit", f"{SITE}/runtime_guard/exchange.py", 176),
        Frame("Guard.mark_exit", f"{SITE}/runtime_guard/guard.py", 950),
        Frame("main", f"{SITE}/runtime_guard/bootstrap.py", 77),
    ]
    b = blocked_on(frames)
    assert (b.category, b.what) == ("exit", "leaving the program (the guard was publishing its exit)")


def test_a_process_in_jax_shutdown_barrier_is_leaving():
    # The program reached its end; JAX's atexit shutdown waits there for every other process
    # (a report once showed it "waiting on: ?").
    frames = [
        Frame("State.shutdown", f"{SITE}/jax/_src/distributed.py", 199),
        Frame("shutdown", f"{SITE}/jax/_src/distributed.py", 330),
        Frame("clean_up", f"{SITE}/jax/_src/api.py", 2582),
    ]
    b = blocked_on(frames)
    assert b.category == "exit" and "JAX's shutdown barrier" in b.what


def test_calls_on_line():
    assert calls_on_line("total(x).block_until_ready()") == ["total", "total.block_until_ready"]
    assert calls_on_line("for x in xs:") == []
    assert calls_on_line("return f(g(1))") == ["g", "f"]  # evaluation order: the outermost call last


def test_outliers_smaller_class_then_not_waiting_then_least_progressed():
    at = lambda line, *native: _snap(("<module>", "/app/train.py", line), native=native)  # noqa: E731
    coll = ("gloo::allreduce",)
    # 3 vs 1: the single one is odd, whatever it does.
    m, _ = merge_stacks({0: [at(10, *coll)], 1: [at(10, *coll)], 2: [at(12, *coll)], 3: [at(10, *coll)]})
    assert m["outliers"] == [2] and m["classes"][0]["processes"] == [2]
    # 1 vs 1: the one not waiting on its peers (sleeping) is odd, the one in the collective waits for it.
    m, _ = merge_stacks({0: [at(10, *coll)], 1: [at(11, "clock_nanosleep", "time_sleep")]})
    assert m["outliers"] == [1]
    # 1 vs 1, both in collectives: the least progressed (guard's last dispatch seq) is odd.
    m, _ = merge_stacks({0: [at(10, *coll)], 1: [at(11, *coll)]}, last_seq={0: 8, 1: 7})
    assert m["outliers"] == [1] and m["classes"][0]["processes"] == [1]
    # Nothing tells them apart: no outlier is claimed.
    m, _ = merge_stacks({0: [at(10, *coll)], 1: [at(11, *coll)]}, last_seq={0: 8, 1: 8})
    assert m["outliers"] == [] and not any(c["outlier"] for c in m["classes"])
    # Everyone at the same place: one class, no outlier.
    m, _ = merge_stacks({0: [at(10, *coll)], 1: [at(10, *coll)]})
    assert len(m["classes"]) == 1 and m["outliers"] == []


def test_stuck_versus_moving():
    a = _snap(("<module>", "/app/train.py", 10))
    b = _snap(("<module>", "/app/train.py", 11))
    _, per = merge_stacks({0: [a, a, a], 1: [a, b], 2: [a]})
    assert (per[0].progress, per[1].progress, per[2].progress) == ("stuck", "moving", "")


def test_all_threads_gives_one_tree_per_thread_name():
    def snap(line):
        s = _snap(("<module>", "/app/train.py", line))
        s.threads.append(Thread(2, "loader", [Frame("fetch", "/app/data.py", 7)], active=True))
        return s

    m, _ = merge_stacks({0: [snap(10)], 1: [snap(12)]}, threads="all")
    assert [t["thread"] for t in m["trees"]] == ["MainThread", "loader"]
    assert m["trees"][1]["root"]["children"][0]["processes"] == [0, 1]


def test_summary_names_who_has_no_stacks():
    from runtime_guard.postmortem import build_postmortem_report
    from runtime_guard.report.model import ProcessReport

    a = _snap(("<module>", "/app/train.py", 10), native=("gloo::allreduce",))
    procs = [ProcessReport(0, "ok"), ProcessReport(1, "died", note="killed by SIGKILL"), ProcessReport(2, "ok")]
    rep = build_postmortem_report("died", procs, {0: [a, a], 2: [a, a]}, headline="process 1 died")
    assert rep.summary.startswith("process 1 died; processes 0,2 are at ")
    assert rep.summary.endswith("in a collective (gloo all-reduce) (stuck); no stacks from process 1")
    assert [p.status for p in rep.processes] == ["ok", "died", "ok"] and rep.processes[1].note == "killed by SIGKILL"
    with pytest.raises(ValueError):
        build_postmortem_report("crash", procs, {})


def test_a_stack_in_the_guards_exit_path_says_the_program_is_leaving():
    from runtime_guard.report.model import Frame
    from runtime_guard.stacks.frames import blocked_on, phrase

    frames = [  # innermost first: the guard publishing the exit after the program's frames are gone
        Frame(name="KV.set", file="/x/runtime_guard/kv.py", line=33),
        Frame(name="Exchange.publish", file="/x/runtime_guard/exchange.py", line=210),
        Frame(name="Exchange.mark_exit", file="/x/runtime_guard/exchange.py", line=155),
        Frame(name="Guard.mark_exit", file="/x/runtime_guard/guard.py", line=500),
        Frame(name="main", file="/x/runtime_guard/bootstrap.py", line=70),
    ]
    b = blocked_on(frames, active=True)
    assert b.category == "exit" and phrase(b).startswith("leaving the program")


def test_a_main_thread_without_python_frames_says_the_program_had_ended():
    # py-spy caught a process whose interpreter was finishing: no stack to merge, and the report
    # says why instead of "none collected".
    from runtime_guard.postmortem import build_postmortem_report
    from runtime_guard.report.model import ProcessReport

    ended = StackSnapshot(0.0, "py-spy", [Thread(1, "MainThread", [], active=False, is_main=True)])
    rep = build_postmortem_report("divergence", [ProcessReport(0, "diverged"), ProcessReport(1, "diverged")],
                                  {0: [ended], 1: [_snap(("<module>", "/app/train.py", 10))]})
    assert rep.processes[0].note == "no stacks: its main thread had no Python frame left: the program had ended"
    assert rep.processes[1].note == ""


def test_one_stack_in_two_different_dispatches_names_each():
    # Both processes stopped on the same line, each in its own dispatch of the step (another
    # static argument on each): the class must not give process 0's dispatch for both.
    same = lambda: [_snap(("<module>", "/app/train.py", 30))]  # noqa: E731
    m, _ = merge_stacks({0: same(), 1: same()}, in_dispatch={
        0: ("/app/train.py", 30, "a cross-process computation (jit(step) static(n=1), dispatch #2)"),
        1: ("/app/train.py", 30, "a cross-process computation (jit(step) static(n=2), dispatch #2)")})
    (c,) = m["classes"]
    assert c["processes"] == [0, 1]
    assert "static(n=1), dispatch #2) on process 0" in c["blocked_on"]
    assert "static(n=2), dispatch #2) on process 1" in c["blocked_on"]


def test_statuses_follow_how_processes_ended():
    # Five survivors of a died report, one of which had aborted meanwhile: it is not `ok`.
    from runtime_guard.postmortem import build_postmortem_report
    from runtime_guard.report.model import ProcessReport
    from runtime_guard.report.render_text import render_text

    a = _snap(("<module>", "/app/train.py", 10), native=("gloo::allreduce",))
    procs = [ProcessReport(0, "died", exit_code=-9, note="killed by SIGKILL")]
    procs += [ProcessReport(i, "ok") for i in range(1, 6)]
    procs[3].exit_code = -6
    procs[4].exit_code = 1
    rep = build_postmortem_report("died", procs, {i: [a] for i in (1, 2, 3, 5)}, headline="process 0 died")
    assert [p.status for p in rep.processes] == ["died", "ok", "ok", "died", "exited", "ok"]
    text = render_text(rep)
    assert "process 3 [died (killed by SIGABRT)]" in text and "process 4 [exited (exit 1)]" in text
    assert "process 0 [died (killed by SIGKILL)]" in text


def test_processes_killed_by_one_signal_are_described_as_killed():
    # Both killed by SIGABRT (gloo aborts both sides of a mismatched collective): one as it left
    # the program, one in its own code. Neither is described as merely "leaving" or "running".
    from runtime_guard.postmortem import build_postmortem_report
    from runtime_guard.report.model import ProcessReport

    leaving = StackSnapshot(0.0, "faulthandler, as the process died", [Thread(1, "MainThread", [
        Frame("KV.get", "/x/runtime_guard/kv.py", 40), Frame("Guard.mark_exit", "/x/runtime_guard/guard.py", 500),
        Frame("main", "/x/runtime_guard/bootstrap.py", 70)], is_main=True)])
    running = StackSnapshot(0.0, "faulthandler, as the process died", [Thread(1, "MainThread", [
        Frame("check", "/app/train.py", 27), Frame("<module>", "/app/train.py", 35)], is_main=True)])
    procs = [ProcessReport(0, "diverged", exit_code=-6), ProcessReport(1, "diverged", exit_code=-6)]
    rep = build_postmortem_report("divergence", procs, {0: [leaving], 1: [running]}, headline="#5 differs")
    clauses = rep.summary.split("; ")[1:]
    assert len(clauses) >= 2 and all("killed by SIGABRT" in c for c in clauses[-2:]), rep.summary
    assert [c["ended"] for c in rep.merged_stacks["classes"]] == ["killed by SIGABRT"] * 2
    assert "train.py:27" in rep.summary


def test_exited_names_the_smaller_side_with_lines():
    from runtime_guard.postmortem import build_postmortem_report
    from runtime_guard.report.model import Dispatch, Location, ProcessReport

    def proc(i, seq, status="ok", code=None, left_at=None):
        d = Dispatch(seq, "jit(step)", {}, Location("/app/train.py", 30))
        return ProcessReport(i, status, last_seq=seq, dispatch=d, exit_code=code,
                             location=Location("/app/train.py", left_at) if left_at else None)

    # Rank-0 bug, 4 processes: process 0 ran #5; 1-3 ended normally at line 40.
    rank0 = [proc(0, 5)] + [proc(i, 4, "exited", 0, 40) for i in (1, 2, 3)]
    rep = build_postmortem_report("exited", rank0, {}, headline="process 1 exited after dispatch #4", seq=5)
    assert rep.merged_stacks["outliers"] == [0] and rep.processes[0].status == "diverged"
    assert "process 0 ran dispatch #5 jit(step) at /app/train.py:30" in rep.summary
    assert "process 1 did not: it left at /app/train.py:40 after dispatch #4 (exit 0)" in rep.summary
    # One process had a batch fewer: it is the odd one; the three that went on stay `ok`.
    fewer = [proc(0, 4, "exited", 0, 40)] + [proc(i, 5) for i in (1, 2, 3)]
    rep = build_postmortem_report("exited", fewer, {}, headline="process 0 exited after dispatch #4", seq=5)
    assert rep.merged_stacks["outliers"] == [0] and [p.status for p in rep.processes[1:]] == ["ok"] * 3
    # It left by an exception: it is the odd one, whatever the sizes.
    raised = [proc(0, 5), proc(1, 4, "exited", 1, 21)]
    rep = build_postmortem_report("exited", raised, {}, headline="process 1 raised", seq=5)
    assert rep.merged_stacks["outliers"] == [1] and rep.processes[0].status == "ok"


def test_user_traceback_drops_the_guards_frames_only():
    import traceback

    from runtime_guard.report.model import Report
    from runtime_guard.report.user_traceback import user_traceback

    def users_code():
        Report.from_dict({"kind": 3, "summary": "x", "processes": []})  # raises inside runtime_guard/

    try:
        users_code()
    except ValueError as e:
        err = e
    files = [f.filename for f in traceback.extract_tb(err.__traceback__)]
    assert any("/runtime_guard/" in f for f in files)
    kept = traceback.extract_tb(user_traceback(err, err.__traceback__))
    assert kept and kept[-1].name == "users_code" and not any("/runtime_guard/" in f.filename for f in kept)
    # A SyntaxError from compiling the user's file has no user frame: only its own location is left.
    try:
        compile("def f(:\n", "/app/train.py", "exec")
    except SyntaxError as e:
        assert user_traceback(e, None) is None
    # An error with no user frame at all (a bug of the guard itself) keeps every frame.
    try:
        Report.from_dict([])
    except ValueError as e:
        guard_only = e.__traceback__.tb_next  # without this test's frame
    assert user_traceback(ValueError(), guard_only) is guard_only
