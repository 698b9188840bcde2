"""The comparator's liveness verdicts on published states (pure functions: the multi-process
tests in test_cross_host.py and test_heartbeats.py show the same with real processes)."""

from __future__ import annotations

from runtime_guard.compare import RUNNING, Tracker, liveness


def _states(hb0: int, hb1: int, seq0: int = 11, seq1: int = 10) -> dict[int, dict]:
    return {0: {"status": RUNNING, "seq": seq0, "hb": hb0}, 1: {"status": RUNNING, "seq": seq1, "hb": hb1}}


def _tracker_after_silence(silence: float) -> Tracker:
    """Process 1's heartbeat stopped `silence` s ago; process 0's goes on; nobody progressed."""
    t = Tracker(died_after=4.0, timeout=20.0)
    t.observe(_states(1, 1), now=100.0)
    t.observe(_states(2, 1), now=100.0 + silence)
    return t


def test_silent_process_is_dead_without_word_from_its_supervisor():
    t = _tracker_after_silence(5.0)
    f = liveness(_states(2, 1), t, 2, now=105.0)
    assert f is not None and f.kind == "died" and f.culprits == [1], f
    # Its supervisor last saw it 6 s ago: gone with its host, too.
    f = liveness(_states(2, 1), t, 2, now=105.0, alive={1: 6.0})
    assert f is not None and f.kind == "died", f


def test_silent_process_its_supervisor_sees_running_is_frozen_not_dead():
    t = _tracker_after_silence(5.0)
    assert liveness(_states(2, 1), t, 2, now=105.0, alive={0: 0.2, 1: 0.3}) is None
    # Still frozen once the others have waited past the hang threshold: reported as the process
    # they wait for, and said to be frozen.
    t = _tracker_after_silence(25.0)
    f = liveness(_states(2, 1), t, 2, now=125.0, alive={0: 0.2, 1: 0.3})
    assert f is not None and f.kind == "missing" and f.culprits == [1], f
    assert "process 1 is frozen" in f.summary and f.detail["frozen"] == [1], f.summary


def test_silent_supervised_process_whose_supervisor_never_reported_is_not_called_dead():
    """Its supervisor learns where to report through the process itself: a process that froze
    before that is silent and unreported, like a dead one. `died` would stop a healthy job."""
    t = _tracker_after_silence(5.0)
    states = _states(2, 1)
    states[1]["sup"] = True
    assert liveness(states, t, 2, now=105.0, alive={0: 0.2}) is None
    assert liveness(states, t, 2, now=105.0) is None
    # Once its supervisor has reported, its silence counts again.
    f = liveness(states, t, 2, now=105.0, alive={0: 0.2, 1: 6.0})
    assert f is not None and f.kind == "died" and f.culprits == [1], f
    # The others still wait for it: the hang threshold names it.
    t = _tracker_after_silence(25.0)
    f = liveness(states, t, 2, now=125.0, alive={0: 0.2})
    assert f is not None and f.kind == "missing" and f.culprits == [1], f


def test_every_process_gone_after_unequal_work_is_reported():
    from runtime_guard import compare

    tracker = compare.Tracker(died_after=5.0, timeout=0.0)
    gone = {0: {"seq": 4, "status": "exited", "hb": 1}, 1: {"seq": 3, "status": "exited", "hb": 1}}
    f = compare.liveness(gone, tracker, 2)
    assert f is not None and f.kind == "exited" and f.culprits == [1] and f.seq == 4, f
    equal = {0: {"seq": 3, "status": "exited", "hb": 1}, 1: {"seq": 3, "status": "failed", "hb": 1}}
    assert compare.liveness(equal, compare.Tracker(died_after=5.0, timeout=0.0), 2) is None
