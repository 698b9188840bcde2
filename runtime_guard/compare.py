"""Decide, from what every process has published, whether the job is still in step.

Pure logic over the published states (no JAX, no KV), so the rules are easy to read and test.
Each state is the dict a process publishes (see `exchange.Publisher.state`):

    {"p": 0, "pid": 123, "host": "...", "seq": 42, "h": ..., "hb": 7, "status": "running",
     "exit": None | {"code": 0, "file": ..., "line": ..., "function": ..., "error": ...},
     "compiling": False, "pending": None | [seq, exact_key] | [seq, exact_key, "0,1"] (a subset's stream),
     "recent": [[seq, key, h, exact, file, line, function], ...],
     "fine": [[seq, h], ...], "coarse": [[seq, h], ...],
     "subsets": {"0,1": {"seq", "h", "recent", "fine", "coarse"}, ...}}

`subsets` holds one stream per subset of the processes that this process has run a computation
over (a sub-mesh: a pipeline stage). Each is numbered and hashed on its own and compared among
the subset's members only; a member that has published no such stream is at #0 of it.

Verdict kinds follow PyTorch's desync debug: `divergence` (processes dispatched different
computations at #N), `exited` (a process left the program after #N while others went on),
`died` (a process stopped without saying so), `missing` (some processes wait at #N that others
never joined), `hang` (everyone stopped at the same point).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

RUNNING, EXITED, FAILED = "running", "exited", "failed"


def hash_points(state: dict) -> dict[int, int]:
    pts: dict[int, int] = {}
    for seq, h in state.get("coarse", ()):
        pts[seq] = h
    for seq, h in state.get("fine", ()):
        pts[seq] = h
    for rec in state.get("recent", ()):
        pts[rec[0]] = rec[2]
    if state.get("seq"):
        pts[state["seq"]] = state["h"]
    return pts


def subset_name(subset: tuple[int, ...]) -> str:
    return ",".join(map(str, subset))


def subset_text(subset: tuple[int, ...]) -> str:
    return f"processes {_plist(list(subset))}"


def subset_states(states: dict[int, dict]) -> dict[tuple[int, ...], dict[int, dict]]:
    """Per subset any process has published a stream for: each member's state of that stream
    (members that published a state but nothing over that subset are at #0). Members that have
    published no state at all are left out, as in the main stream."""
    names = {name for st in states.values() for name in (st.get("subsets") or {})}
    out: dict[tuple[int, ...], dict[int, dict]] = {}
    for name in sorted(names):
        sub = tuple(int(x) for x in name.split(","))
        out[sub] = {p: dict((states[p].get("subsets") or {}).get(name) or {"seq": 0, "h": 0},
                            status=states[p].get("status"))
                    for p in sub if p in states}
    return out


def recent_by_seq(state: dict) -> dict[int, list]:
    return {rec[0]: rec for rec in state.get("recent", ())}


@dataclass
class Suspect:
    """The first divergence lies in lo..hi (inclusive) between processes a and b."""

    lo: int
    hi: int
    a: int
    b: int


def find_suspect(states: dict[int, dict]) -> Suspect | None:
    """Earliest range where two processes' rolling hashes tell they dispatched different things."""
    procs = sorted(states)
    if len(procs) < 2:
        return None
    ref = procs[0]
    best: Suspect | None = None
    ref_pts = hash_points(states[ref])
    for q in procs[1:]:
        q_pts = hash_points(states[q])
        common = min(states[ref].get("seq", 0), states[q].get("seq", 0))
        shared = sorted(s for s in set(ref_pts) & set(q_pts) if s <= common)
        last_equal = 0
        for s in shared:
            if ref_pts[s] == q_pts[s]:
                last_equal = s
                continue
            cand = Suspect(last_equal + 1, s, ref, q)
            if best is None or cand.hi < best.hi:
                best = cand
            break
    return best


def first_difference(records: dict[int, dict[int, list]], lo: int, hi: int) -> int | None:
    """First seq in lo..hi where the processes' records differ in what was dispatched.

    `records[p][seq]` is p's record. A process with no record at a seq (it has not got there) does
    not count as different there."""
    for seq in range(lo, hi + 1):
        keys = {recs[seq][1] for recs in records.values() if seq in recs}
        if len(keys) > 1:
            return seq
    return None


def exact_conflict(states: dict[int, dict], sig_sets: dict[int, set[int]] | None) -> tuple[int, str] | None:
    """Same computation but different executables (shapes, dtypes, shardings) at one seq.

    Both processes compiled at that seq: compare the exact signatures. One compiled and the other
    ran a cached executable: the other can only have run the same thing if it ever compiled it
    (needs `sig_sets`; returns ("need-sigs") when they are required but not given)."""
    by_seq: dict[int, dict[int, list]] = {}
    for p, st in states.items():
        settled = st.get("settled", 0)
        for rec in st.get("recent", ()):
            if not rec[3] and rec[0] > settled:
                continue  # still in flight: may yet attach a compiled signature
            by_seq.setdefault(rec[0], {})[p] = rec
    need = False
    for seq in sorted(by_seq):
        recs = by_seq[seq]
        if len(recs) < 2 or len({r[1] for r in recs.values()}) > 1:
            continue
        exacts = {p: r[3] for p, r in recs.items()}
        known = {e for e in exacts.values() if e}
        if len(known) > 1:
            return seq, "exact"
        if len(known) == 1 and any(not e for e in exacts.values()):
            (x,) = known
            if sig_sets is None:
                need = True
                continue
            for p, e in exacts.items():
                if not e and p in sig_sets and x not in sig_sets[p]:
                    return seq, "uncompiled"
    return (0, "need-sigs") if need else None


@dataclass
class Tracker:
    """What the comparator remembers between rounds: heartbeats and progress over time."""

    died_after: float
    timeout: float  # fixed hang threshold; 0 = learn
    min_learned: float = 20.0
    factor: float = 10.0
    last_hb: dict[int, tuple[int, float]] = field(default_factory=dict)
    last_total: int = -1
    last_progress: float = field(default_factory=time.monotonic)
    intervals: list[float] = field(default_factory=list)
    advances: int = 0
    compiling_seen: bool = False

    def observe(self, states: dict[int, dict], now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        for p, st in states.items():
            hb = st.get("hb", 0)
            prev = self.last_hb.get(p)
            if prev is None or prev[0] != hb:
                self.last_hb[p] = (hb, now)
        # Progress in any stream, subsets included: a pipeline may run mostly on sub-meshes.
        total = sum(st.get("seq", 0) + sum(int(sub.get("seq", 0)) for sub in (st.get("subsets") or {}).values())
                    for st in states.values())
        compiling = any(st.get("compiling") for st in states.values())
        if total != self.last_total or compiling:
            if self.last_total >= 0 and total != self.last_total:
                self.advances += 1
                # Skip warm-up and intervals that contained compilation when learning step times.
                if self.advances > 5 and not self.compiling_seen:
                    self.intervals.append(now - self.last_progress)
                    del self.intervals[:-200]
            self.compiling_seen = compiling
            self.last_total = total
            self.last_progress = now

    def threshold(self) -> float:
        if self.timeout > 0:
            return self.timeout
        if not self.intervals:
            return max(self.min_learned, 60.0)
        return max(self.min_learned, self.factor * max(self.intervals))

    def stale(self, p: int, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        prev = self.last_hb.get(p)
        return 0.0 if prev is None else now - prev[1]

    def idle(self, now: float | None = None) -> float:
        now = time.monotonic() if now is None else now
        return now - self.last_progress


FAILED_GRACE = 5.0  # s without progress anywhere after one process raised: the others wait for it


@dataclass
class Finding:
    kind: str
    seq: int | None
    culprits: list[int]  # the processes that are not where the others are
    summary: str
    detail: dict[str, Any] = field(default_factory=dict)


def liveness(states: dict[int, dict], tracker: Tracker, expected: int, now: float | None = None,
             alive: dict[int, float] | None = None, gone: dict[int, float] | None = None) -> Finding | None:
    """Exits, deaths, and hangs. Divergence is checked first by the caller. `alive`: seconds since
    each process's supervisor last saw its OS process running, where known; `gone`: seconds since
    its supervisor saw its OS process end (exit, or a zombie)."""
    f = _liveness(states, tracker, expected, now, alive, gone)
    if f is not None and f.kind in ("missing", "hang") and alive:
        # Say which of the processes the others wait for are frozen rather than dead.
        now = time.monotonic() if now is None else now
        silent = [p for p, st in sorted(states.items()) if st.get("status") == RUNNING
                  and tracker.stale(p, now) > tracker.died_after and p not in (gone or {})]
        frozen = [p for p in silent if alive.get(p, float("inf")) < tracker.died_after]
        unheard = [p for p in silent if p in alive and p not in frozen]
        if frozen:
            f.summary += "; " + "; ".join(
                f"process {p} is frozen: no heartbeat for {tracker.stale(p, now):.0f} s while its OS process runs "
                f"(a long C call holding the GIL, or stopped in a debugger)" for p in frozen)
            f.detail["frozen"] = frozen
        if unheard:
            f.summary += "; " + "; ".join(
                f"process {p}: no heartbeat for {tracker.stale(p, now):.0f} s, and its supervisor last reported it "
                f"running {alive[p]:.0f} s ago (its host is down, or too loaded to report)" for p in unheard)
            f.detail["unheard"] = unheard
    return f


def _liveness(states: dict[int, dict], tracker: Tracker, expected: int, now: float | None,
              alive: dict[int, float] | None, ended_at: dict[int, float] | None = None) -> Finding | None:
    now = time.monotonic() if now is None else now
    running = {p: s for p, s in states.items() if s.get("status") == RUNNING}
    gone = {p: s for p, s in states.items() if s.get("status") in (EXITED, FAILED)}
    # A process that left while someone else already dispatched past its last computation.
    for p, st in sorted(gone.items()):
        beyond = [q for q, s in running.items() if s.get("seq", 0) > st.get("seq", 0)]
        # After an exception in one process the job is failing anyway: the others standing still
        # for a few seconds is enough to say they wait for it (the hang threshold is for healthy
        # jobs, where a long pause may be a long step).
        limit = min(tracker.threshold(), FAILED_GRACE) if st.get("status") == FAILED else tracker.threshold()
        stuck = running and tracker.idle(now) > limit
        how = "raised an exception and exited" if st.get("status") == FAILED else "exited"
        if not beyond:
            # Or past its last computation over a subset of the processes that includes it.
            for sub, sub_states in subset_states(states).items():
                if p not in sub_states:
                    continue
                mine = int(sub_states[p].get("seq", 0))
                ahead = [q for q, s in sub_states.items() if q in running and int(s.get("seq", 0)) > mine]
                if ahead:
                    return Finding("exited", mine + 1, [p],
                                   f"process {p} {how} after dispatch #{mine} over {subset_text(sub)}; "
                                   f"process{'es' if len(ahead) > 1 else ''} {_plist(ahead)} went on to "
                                   f"#{mine + 1} over {subset_text(sub)}, which process {p} will never join",
                                   detail={"subset": list(sub)})
        if beyond:
            return Finding("exited", st.get("seq", 0) + 1, [p],
                           f"process {p} {how} after dispatch #{st.get('seq', 0)}; "
                           f"process{'es' if len(beyond) > 1 else ''} {_plist(beyond)} went on to "
                           f"#{st.get('seq', 0) + 1}, which process {p} will never join")
        if stuck and st.get("status") == FAILED:
            # The others are stuck *behind* it (dispatch is asynchronous: the failed process may have
            # queued many computations past theirs): they wait in a computation it left behind.
            waiting = sorted(running)
            at = {q: running[q].get("seq", 0) for q in waiting}
            where = ", ".join(f"process {q} at #{at[q]}" for q in waiting)
            return Finding("exited", max(at.values()), [p],
                           f"process {p} {how} after dispatch #{st.get('seq', 0)}; the others made no "
                           f"progress for {tracker.idle(now):.0f} s since ({where}), waiting for it")
    if gone and not running and len(gone) >= expected:
        unequal = _unequal_at_end(gone)
        if unequal is not None:
            return unequal
    for p in sorted(running):
        stale = tracker.stale(p, now)
        if stale > tracker.died_after:
            seen, ended = (alive or {}).get(p), (ended_at or {}).get(p)
            if ended is not None:
                # Silent, and its supervisor saw its OS process end: dead.
                return Finding("died", states[p].get("seq", 0) + 1, [p],
                               f"process {p} stopped sending heartbeats {stale:.1f} s ago after dispatch "
                               f"#{states[p].get('seq', 0)}, and its supervisor saw it end {ended:.1f} s ago "
                               f"(killed or crashed)")
            if seen is not None or states[p].get("sup"):
                # Supervised: its supervisor says outright when it ends (above). Silent while its
                # supervisor sees it running is frozen (a long C call holding the GIL, a
                # debugger), not dead. Silent while its supervisor's sightings are old, or have
                # never reached process 0's host, says nothing: that evidence comes late too on
                # a loaded machine (the supervisor starved of CPU, or the address of process 0's
                # host still on its way through the process, which may have frozen first), and
                # `died` stops the job. If the others wait for it, the hang threshold reports it.
                continue
            return Finding("died", states[p].get("seq", 0) + 1, [p],
                           f"process {p} stopped sending heartbeats {stale:.1f} s ago (killed, crashed or "
                           f"frozen) after dispatch #{states[p].get('seq', 0)}")
    missing_procs = [p for p in range(expected) if p not in states]
    if running and tracker.idle(now) > tracker.threshold():
        seqs = {p: s.get("seq", 0) for p, s in running.items()}
        top = max(seqs.values())
        behind = sorted(p for p, s in seqs.items() if s < top)
        if missing_procs:
            return Finding("missing", None, missing_procs,
                           f"process{'es' if len(missing_procs) > 1 else ''} {_plist(missing_procs)} never "
                           f"published any state; the others have made no progress for {tracker.idle(now):.0f} s")
        if not behind:
            # Everyone is at the same place in the main stream: is someone behind in a subset's?
            for sub, sub_states in subset_states(running).items():
                sseq = {p: int(s.get("seq", 0)) for p, s in sub_states.items()}
                stop = max(sseq.values(), default=0)
                lag = sorted(p for p, s in sseq.items() if s < stop)
                if lag:
                    first = min(sseq[p] for p in lag) + 1
                    return Finding("missing", first, lag,
                                   f"no progress for {tracker.idle(now):.0f} s: process{'es' if len(lag) > 1 else ''} "
                                   f"{_plist(lag)} never joined dispatch #{first} over {subset_text(sub)} that "
                                   f"process{'es' if len(sseq) - len(lag) > 1 else ''} "
                                   f"{_plist(sorted(set(sseq) - set(lag)))} dispatched",
                                   detail={"subset": list(sub)})
        if behind:
            return Finding("missing", min(seqs[p] for p in behind) + 1, behind,
                           f"no progress for {tracker.idle(now):.0f} s: process{'es' if len(behind) > 1 else ''} "
                           f"{_plist(behind)} never joined dispatch #{min(seqs[p] for p in behind) + 1} that "
                           f"process{'es' if len(seqs) - len(behind) > 1 else ''} "
                           f"{_plist(sorted(set(seqs) - set(behind)))} dispatched")
        return Finding("hang", top, [], f"no progress anywhere for {tracker.idle(now):.0f} s; every process "
                       f"is past dispatch #{top} (threshold {tracker.threshold():.0f} s)")
    return None


def _unequal_at_end(gone: dict[int, dict]) -> Finding | None:
    """Every process has left: did each run as much cross-process work as the others, in every
    stream? A process that ran one more computation (dispatched, never waited for) and left is
    reported even though nobody was left waiting for it."""
    streams: list[tuple[tuple[int, ...] | None, dict[int, int]]] = [(None, {p: int(s.get("seq", 0)) for p, s in gone.items()})]
    for sub, sub_states in subset_states(gone).items():
        streams.append((sub, {p: int(s.get("seq", 0)) for p, s in sub_states.items()}))
    for sub, seqs in streams:
        top, low = max(seqs.values()), min(seqs.values())
        if top == low:
            continue
        ahead = sorted(p for p, v in seqs.items() if v == top)
        short = sorted(p for p, v in seqs.items() if v < top)
        where = f" over {subset_text(sub)}" if sub is not None else ""
        return Finding("exited", low + 1, short,
                       f"every process has left, but not after the same work: process"
                       f"{'es' if len(ahead) > 1 else ''} {_plist(ahead)} dispatched {top} cross-process "
                       f"computation{'s' if top != 1 else ''}{where}, process{'es' if len(short) > 1 else ''} "
                       f"{_plist(short)} only {', '.join(str(seqs[p]) for p in short)}: #{low + 1} ran on one "
                       f"side only (its result was never waited for, or the other side never saw it)",
                       detail={"subset": list(sub)} if sub is not None else {})
    return None


def _plist(ps: list[int]) -> str:
    ps = sorted(ps)
    if len(ps) <= 1:
        return ",".join(map(str, ps))
    return ", ".join(map(str, ps[:-1])) + " and " + str(ps[-1])
