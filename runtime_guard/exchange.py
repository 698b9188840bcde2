"""Background exchange through the coordination service: publish, compare, decide, tell everyone.

Every guarded process runs two daemon threads:
  - the *publisher* writes this process's state (`state/<p>`: dispatch count, rolling hash, the
    last few dispatch records, hash checkpoints, heartbeat, exit status) at most every `interval`
    seconds, plus the names and signatures of computations the first time they are seen, and a
    local copy for the supervisor. On process 0 it also *compares*: one `dir` read of all states per
    round; on a suspicion it asks every process for the records in question, then publishes the
    verdict.
  - the *watcher* (not on process 0, which sends the control messages) polls the control counter
    `ctl/latest` (one small read every `CTL_POLL`) and answers detail requests or acts on the
    verdict.
Store size stays bounded: one state key per process, one key per distinct computation, and the
two most recent control messages.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
from pathlib import Path
from typing import Any, Callable

from runtime_guard import compare, verdict
from runtime_guard.kv import KV, KVError
from runtime_guard.recorder import Recorder
from runtime_guard.report.model import Dispatch, Location, ProcessReport, Report
from runtime_guard.settings import GuardSettings

# What one published state carries. Sized for the coordinator: with N processes the comparator
# reads N states per round (see docs/benchmarks.md); everything else is fetched on demand.
RECENT = 16  # last records (call site text only on the newest)
# Records in the state a process publishes as it leaves (~60 B each, once): the others may be far
# behind it (asynchronous dispatch lets a process queue many steps), and once it is gone nobody can
# ask it for the records where they parted. Fewer per process in large jobs, so that all of them
# leaving together stays under ~16 MB in the coordination service.
FINAL_RECENT = 1024
FINAL_RECORDS_BUDGET = 1 << 18
CHECKPOINTS = 8  # last rolling-hash checkpoints per stride
# At most this long a leaving process waits for the others to leave too, for the last comparison.
# They normally leave within moments of each other; one slow to get there (host work after its last
# dispatch, or starved of CPU) must still be compared, and JAX's shutdown barrier waits for it
# anyway. One that never gets there is reported meanwhile by the comparison rounds (a hang, a
# death, a dispatch the leaver never made), and a verdict ends the wait.
FINAL_WAIT = 30.0
HEARTBEAT = 0.5  # seconds between unchanged state publications
# State writes per second the guard allows itself on the coordination service (all processes
# together). Up to 500 processes publish every `interval` (0.25 s); beyond, the interval grows with
# N so that the coordinator's load stays flat (see docs/benchmarks.md, coordinator load).
PUBLISH_BUDGET = 2000.0
DETAIL_WAIT = 2.0  # how long the comparator waits for detail answers (at least 4 control polls)
# The control channel is polled, not long-polled: a `blocking_key_value_get` that times out leaks
# ~20 kB in the caller and ~25 kB in the coordination service, in process 0 (JAX 0.10.2 and 0.12;
# a timed-out call stays registered). A 1 s long-poll made every process's RSS grow for ever, process
# 0's fastest (benchmarks/guard_rss.py). A read of an existing key leaks nothing, but any call costs
# ~0.1 ms of the calling thread and ~0.3 ms more of the client's and the service's threads: at
# 0.25 s, ~1.4 ms of CPU a second per process. Reads per second on the coordinator stay under
# CTL_BUDGET, all processes together.
CTL_POLL = 0.25
CTL_POLL_BRISK = 0.03  # while leaving, and for a few seconds after a control message
CTL_BUDGET = 2000.0
# The local copy of the state (for this host's supervisor, which reads it only to write a report)
# is rewritten at most this often while only the dispatch count moves: each write is ~0.4 ms of
# file system calls. A change of status or of a strict-mode wait is written at once.
LOCAL_STATE_EVERY = 1.0
COLLECTOR_EAGER = 30.0  # s of trying every round for the stack collector's address
# A record made before its call ran may still be taken back (the call turned out to run on this
# process only, over a subset, or inside a trace): it is published once its call returned, its
# executable was seen, or it has been in flight this long outside compilation (a dispatch that
# blocks: a hang must still be attributed). A record is never published and then withdrawn.
TENTATIVE_GRACE = 1.0


class Registry:
    """Names of dispatch keys and fields of exact signatures, published once each."""

    def __init__(self, sink: Callable[[dict], None] | None = None) -> None:
        self.sink = sink  # also written locally (the flight recorder's side file)
        self.lock = threading.Lock()
        self.names: dict[int, str] = {}
        self.fields: dict[int, dict[str, str]] = {}
        self.exact_for_key: dict[int, int] = {}  # last exact executable seen for a key
        self.unpublished: list[tuple[str, Any]] = []
        self.sig_set: set[int] = set()
        self.sig_set_dirty = False

    def name(self, key: int, name: str) -> None:
        if key not in self.names:
            with self.lock:
                self.names[key] = name
                self.unpublished.append((f"names/{key:x}", name))
                if self.sink is not None:
                    self.sink({"key": key, "name": name})

    def exact(self, key: int, exact: int, fields: dict[str, str]) -> None:
        with self.lock:
            self.exact_for_key[key] = exact
            if exact not in self.fields:
                self.fields[exact] = fields
                self.unpublished.append((f"sig/{exact:x}", fields))
                if self.sink is not None:
                    self.sink({"exact": exact, "fields": fields})
            if exact not in self.sig_set:
                self.sig_set.add(exact)
                self.sig_set_dirty = True

    def take(self) -> tuple[list[tuple[str, Any]], list[int] | None]:
        with self.lock:
            items, self.unpublished = self.unpublished, []
            sigs = sorted(self.sig_set) if self.sig_set_dirty else None
            self.sig_set_dirty = False
            return items, sigs


def _site(rec: Any) -> tuple[str, int, str]:
    code = rec.code
    if code is None:
        return "", 0, ""
    return code.co_filename, rec.line, code.co_name


def _source(file: str, line: int) -> str:
    import linecache

    return linecache.getline(file, line).strip() if file and line else ""


class Exchange:
    def __init__(self, kv: KV, recorder: Recorder, registry: Registry, process: int, count: int,
                 settings: GuardSettings, on_verdict: Callable[[dict], None],
                 streams: dict[tuple[int, ...], Recorder] | None = None) -> None:
        self.kv = kv
        self.recorder = recorder
        # Streams of computations over subsets of the processes (replaced, never mutated, by the
        # guard when a new subset appears).
        self.streams: dict[tuple[int, ...], Recorder] = streams if streams is not None else {}
        self.registry = registry
        self.p = process
        self.n = count
        self.settings = settings
        self.on_verdict = on_verdict
        self.status = compare.RUNNING
        self.exit_info: dict | None = None
        # Strict mode: (seq, exact) this process waits at; (seq, exact, "0,1") in a subset's stream.
        self.pending: tuple | None = None
        self.compiling = 0
        self.hb = 0
        self.verdict: dict | None = None
        self.verdict_event = threading.Event()
        self.verdict_handled = threading.Event()
        self.final_event = threading.Event()
        self.stop_event = threading.Event()
        self.interval = max(settings.interval, count / PUBLISH_BUDGET)
        self.heartbeat = max(HEARTBEAT, 2 * self.interval)
        self.ctl_poll = max(CTL_POLL, count / CTL_BUDGET)
        self.detail_wait = max(DETAIL_WAIT, 4 * self.ctl_poll)
        self.tracker = compare.Tracker(died_after=max(settings.died_after, 3 * self.heartbeat),
                                       timeout=settings.timeout,
                                       min_learned=settings.min_learned_timeout, factor=settings.learned_factor)
        self.host = socket.gethostname()
        self.coordinator = ""
        self._collector_published = False
        self._collector_fetched = self.p == 0
        self._collector_tried = -1.0
        self._collector_every = 0.0  # seconds between tries: every round at first, then growing
        self._collector_eager_until = 0.0  # (set by start)
        self._last_pub = (-1, None, None, 0.0)
        self._publish_lock = threading.Lock()
        self._last_local = (None, None, -LOCAL_STATE_EVERY)  # status, pending, time of the last local write
        self._kv_fail_since: float | None = None
        self._threads: list[threading.Thread] = []
        self._state_dir = Path(settings.state_dir) if settings.state_dir else None
        self.errors: list[str] = []
        # The first cross-process call dispatched while another thread's was in flight (Guard.overlap)
        self.overlap: Callable[[], dict | None] = lambda: None
        self._overlap_sites: dict | None = None
        # id(recorder) -> (seq, key, first seen) of its last record while it may be taken back
        self._tentative: dict[int, tuple[int, int, float]] = {}

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> None:
        if self._state_dir is not None:
            self._state_dir.mkdir(parents=True, exist_ok=True)
        self._collector_eager_until = time.monotonic() + COLLECTOR_EAGER
        loops = [(self._publish_loop, "mcjax-guard-publisher")]
        if self.p != 0:  # process 0 sends the control messages: it acts on them as it sends them
            loops.append((self._watch_loop, "mcjax-guard-watcher"))
        for target, name in loops:
            t = threading.Thread(target=target, name=name, daemon=True)
            t.start()
            self._threads.append(t)

    def stop(self, wait: float = 0.0) -> None:
        self.stop_event.set()
        deadline = time.monotonic() + wait
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))

    def mark_exit(self, status: str, info: dict, final_wait: float = FINAL_WAIT) -> None:
        """Called from the main thread as the program leaves: publish at once, then take part in a
        last comparison (a fast program can finish before any background round saw its end). The
        wait is bounded (FINAL_WAIT); JAX's own shutdown waits for every process anyway."""
        self.status = status
        self.exit_info = info
        try:
            self.publish(force=True)
            self._final_round(final_wait)
        except Exception as e:  # never let the guard change how the program exits
            self._note(f"could not publish exit: {e}")

    def _final_round(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        if self.p != 0:
            deadline += 5.0  # process 0 may itself wait `timeout` for the last of the others
            while time.monotonic() < deadline and not self.final_event.is_set() and self.verdict is None:
                self.final_event.wait(0.05)
            return
        while time.monotonic() < deadline and self.verdict is None:
            states = self.kv.dir("state/")
            if len(states) >= self.n and all(isinstance(s, dict) and s.get("status") != compare.RUNNING
                                             for s in states.values()):
                break
            time.sleep(0.05)
        if self.verdict is None:
            self.compare_round()
        if self.verdict is None:
            self._send_ctl({"type": "final"})
            # It hosts the coordination service: leaving before the others read "final" would
            # take it away from processes still waiting here (JAX aborts them), as after a verdict.
            self._wait_acknowledged("left/")

    # -- publishing ----------------------------------------------------------------------------

    def state(self) -> dict:
        final = max(RECENT, min(FINAL_RECENT, FINAL_RECORDS_BUDGET // max(1, self.n)))
        seq, h, tail, fine, coarse = self._decided(
            self.recorder, self.recorder.snapshot(RECENT if self.status == compare.RUNNING else final))
        recent = [[r.seq, r.key, r.h, r.exact, "", r.line, ""] for r in tail]
        if tail:
            recent[-1][4:] = list(_site(tail[-1]))
        return {"p": self.p, "pid": os.getpid(), "host": self.host, "seq": seq, "h": h, "hb": self.hb,
                "status": self.status, "exit": self.exit_info, "compiling": self.compiling > 0,
                "pending": list(self.pending) if self.pending else None, "recent": recent,
                "fine": [list(x) for x in fine[-CHECKPOINTS:]], "coarse": [list(x) for x in coarse[-CHECKPOINTS:]],
                "t": time.time(), "sup": self._state_dir is not None,
                "settled": self.recorder.settled,
                "threads": self._overlap_state(),
                "subsets": {compare.subset_name(sub): self._stream_state(rec) for sub, rec in self.streams.items()}}

    def _overlap_state(self) -> dict | None:
        """The first overlap of two threads' cross-process calls, with both call sites (read once:
        the records leave the ring later)."""
        if self._overlap_sites is None:
            ov = self.overlap()
            if ov is None:
                return None
            sites = {}
            for k in ("with", "seq"):
                recs = self.recorder.records(ov[k], ov[k])
                f, ln, fn = _site(recs[0]) if recs else ("", 0, "")
                name = self.registry.names.get(recs[0].key, "?") if recs else "?"
                sites[k] = {"seq": ov[k], "name": name, "file": f, "line": ln, "function": fn, "source": _source(f, ln)}
            self._overlap_sites = dict(sites, count=ov["count"])
        return self._overlap_sites

    def _decided(self, rec: Recorder, snap: tuple) -> tuple:
        """`snap` (a `Recorder.snapshot`) without its last record while that one may still be
        taken back (see TENTATIVE_GRACE)."""
        seq, h, tail, fine, coarse = snap
        last = tail[-1] if tail else None
        if (last is None or last.seq != seq or last.exact or seq <= rec.settled
                or self.status != compare.RUNNING):  # (leaving: nothing will be taken back)
            self._tentative.pop(id(rec), None)
            return snap
        now = time.monotonic()
        first = self._tentative.get(id(rec))
        if first is None or first[:2] != (seq, last.key):
            first = self._tentative[id(rec)] = (seq, last.key, now)
        if now - first[2] >= TENTATIVE_GRACE and not self.compiling:
            return snap  # long in flight: a dispatch that blocks
        if seq == 1:
            return 0, 0, [], [], []
        if len(tail) < 2 or tail[-2].seq != seq - 1:
            return snap  # (the previous record left the ring: cannot happen with RECENT >= 2)
        return (seq - 1, tail[-2].h, tail[:-1], [x for x in fine if x[0] < seq], [x for x in coarse if x[0] < seq])

    def _stream_state(self, rec: Recorder) -> dict:
        """What a process publishes of one subset stream: as the main state, but every recent
        record carries its call site (the comparator may not be a member: it cannot ask later)."""
        seq, h, tail, fine, coarse = self._decided(rec, rec.snapshot(RECENT))
        return {"seq": seq, "h": h, "recent": [[r.seq, r.key, r.h, r.exact, *_site(r)] for r in tail],
                "fine": [list(x) for x in fine[-CHECKPOINTS:]], "coarse": [list(x) for x in coarse[-CHECKPOINTS:]]}

    def publish(self, force: bool = False) -> None:
        # The publisher thread and the main thread leaving the program (mark_exit) both publish.
        with self._publish_lock:
            self._publish(force)

    def _publish(self, force: bool) -> None:
        now = time.monotonic()
        seq, status, pending, last = self._last_pub
        changed = (self._progress(), self.status, self.pending) != (seq, status, pending)
        if not (force or changed or now - last >= self.heartbeat):
            return
        self.hb += 1
        st = self.state()
        self._last_pub = (self._progress(), self.status, self.pending, now)
        if self._state_dir is not None:
            # Local copy first: the supervisor still gets it when the coordination service is gone.
            status, pend, written = self._last_local
            if force or (self.status, self.pending) != (status, pend) or now - written >= LOCAL_STATE_EVERY:
                _atomic_json(self._state_dir / f"p{self.p}.json",
                             dict(st, last=self._last_dispatch(), n=self.n, coordinator=self.coordinator))
                self._last_local = (self.status, self.pending, now)
            self._relay_collector()
            if not self._collector_fetched and now - self._collector_tried >= self._collector_every:
                # Every round while the job starts (the supervisor needs the address before this
                # process can freeze in a long C call), then thinning out (with -n there is no
                # collector; each try costs ~0.4 ms of CPU).
                self._collector_tried = now
                if now > self._collector_eager_until:
                    self._collector_every = min(8.0, max(1.0, self._collector_every * 1.25))
                self._fetch_collector()
        items, sigs = self.registry.take()
        for key, value in items:
            self.kv.set(key, value)
        if sigs is not None:
            self.kv.set(f"sigs/{self.p}", sigs)
        self.kv.set(f"state/{self.p}", st)

    def _progress(self) -> tuple:
        """Dispatches so far in every stream: what changes when this process makes progress (a
        record moved from one stream to another changes it too)."""
        return (self.recorder.seq, self.recorder.settled, *(rec.seq for rec in self.streams.values()))

    def _relay_collector(self) -> None:
        """Process 0's supervisor runs the cross-host stack collector and leaves its address in
        the state directory; process 0 publishes it for the other hosts' supervisors."""
        if self.p != 0 or self._collector_published or self._state_dir is None:
            return
        path = self._state_dir / "collector.json"
        if path.exists():
            try:
                self.kv.set("collector", json.loads(path.read_text()))
                self._collector_published = True
            except (OSError, ValueError):
                pass

    def _fetch_collector(self) -> None:
        """Other hosts: hand the collector's address to the local supervisor, as soon as process 0
        published it (the supervisor reports liveness there) and again before a verdict."""
        if self.p == 0 or self._state_dir is None:
            return
        try:
            info = self.kv.get("collector")
        except KVError:
            return
        if isinstance(info, dict):
            _atomic_json(self._state_dir / "collector.json", info)
            self._collector_fetched = True

    def _last_dispatch(self) -> dict | None:
        """The last dispatch with its name and fields, for the local supervisor's own reports."""
        recs = self.recorder.records(self.recorder.seq, self.recorder.seq)
        if not recs:
            return None
        r = recs[-1]
        f, ln, fn = _site(r)
        exact = r.exact or self.registry.exact_for_key.get(r.key, 0)
        return {"seq": r.seq, "name": self.registry.names.get(r.key, "?"), "file": f, "line": ln, "function": fn,
                "source": _source(f, ln), "fields": self.registry.fields.get(exact, {})}

    def _publish_loop(self) -> None:
        while not self.stop_event.is_set():
            try:
                self.publish()
                if self.p == 0 and self.verdict is None:
                    self.compare_round()
                self._kv_fail_since = None
            except KVError as e:
                self._kv_unreachable(str(e))
            except Exception as e:  # a guard bug must not take the program down
                self._note(f"guard thread error: {e!r}")
            self.stop_event.wait(self.interval)

    def _kv_unreachable(self, err: str) -> None:
        now = time.monotonic()
        if self._kv_fail_since is None:
            self._kv_fail_since = now
            return
        if now - self._kv_fail_since > self.settings.died_after and self.verdict is None and self.status == compare.RUNNING:
            seq = self.recorder.seq
            rep = Report(kind="died", summary=(f"the coordination service is unreachable for "
                                               f"{now - self._kv_fail_since:.1f} s: process 0, which hosts it, "
                                               f"probably died (this is process {self.p}, after dispatch #{seq})"),
                         processes=[ProcessReport(process_index=0, status="died", note="hosts the coordination service"),
                                    ProcessReport(process_index=self.p, status="ok", last_seq=seq, pid=os.getpid(),
                                                  host=self.host)],
                         created=time.time(), seq=seq + 1, notes=[err[:300]])
            self._deliver(rep.to_dict())

    # -- comparing (process 0) -------------------------------------------------------------------

    def compare_round(self) -> None:
        states = {int(k): v for k, v in self.kv.dir("state/").items() if isinstance(v, dict)}
        self.tracker.observe(states)
        for p, st in sorted(states.items()):
            if isinstance(st.get("threads"), dict):
                self._publish_verdict(_threads_report(p, st["threads"], states, self._guard_info()))
                return
        suspect = compare.find_suspect(states)
        if suspect is not None:
            self._resolve_divergence(states, suspect.lo, suspect.hi)
            return
        conflict = compare.exact_conflict(states, None)
        if conflict is not None and conflict[1] == "need-sigs":
            sig_sets = {int(k): set(v) for k, v in self.kv.dir("sigs/").items() if isinstance(v, list)}
            conflict = compare.exact_conflict(states, sig_sets)
        if conflict is not None and conflict[1] != "need-sigs":
            self._resolve_divergence(states, conflict[0], conflict[0], exact=True)
            return
        if self._pending_mismatch(states):
            return
        for sub, sub_states in compare.subset_states(states).items():
            suspect = compare.find_suspect(sub_states)
            if suspect is not None:
                self._resolve_divergence(states, suspect.lo, suspect.hi, subset=sub)
                return
        alive, gone = self._supervised_liveness()
        finding = compare.liveness(states, self.tracker, self.n, alive=alive, gone=gone)
        if finding is not None and not self._parted_before(states, finding):
            self._resolve_liveness(states, finding)

    def _supervised_liveness(self) -> tuple[dict[int, float] | None, dict[int, float] | None]:
        """Seconds since each process's supervisor last saw its OS process running, and since it
        saw it end (`alive.json`, written by the supervisor on this host; see
        `Supervisor._liveness_tick`). (None, None) when not supervised: heartbeats alone then tell
        whether a process died."""
        if self._state_dir is None:
            return None, None
        try:
            data = json.loads((self._state_dir / "alive.json").read_text())
            now = time.monotonic()  # the supervisor's clock too (system-wide on Linux)
            alive = {int(p): max(0.0, now - float(t)) for p, t in data["alive"].items()}
            gone = {int(p): max(0.0, now - float(t)) for p, t in (data.get("gone") or {}).items()}
            return alive, gone
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None, None

    def _parted_before(self, states: dict[int, dict], finding: compare.Finding) -> bool:
        """A process stuck behind the others may be stuck because it dispatched something else
        earlier, where the published states (the last RECENT records, hash checkpoints every
        FINE) cannot tell: ask for the records up to its current dispatch and look. True when
        that found (and reported) a divergence."""
        if finding.kind not in ("missing", "hang"):
            return False
        running = [s.get("seq", 0) for s in states.values() if s.get("status") == compare.RUNNING]
        if not running or min(running) >= max(s.get("seq", 0) for s in states.values()):
            return False
        hi = min(running)
        lo = max(1, hi - RECENT + 1)
        details = self.request_details(lo, hi)
        keyed = {p: {r["seq"]: [r["seq"], r["key"]] for r in d["records"]} for p, d in details.items()}
        seq = compare.first_difference(keyed, lo, hi)
        if seq is None:
            return False
        self._resolve_divergence(states, seq, seq)
        return True

    def _pending_mismatch(self, states: dict[int, dict]) -> bool:
        """Strict mode: processes waiting to run different things at the same seq."""
        by_seq: dict[tuple[str, int], set[int]] = {}
        for s in states.values():
            if s.get("pending"):
                seq, exact, *sub = s["pending"]
                by_seq.setdefault((sub[0] if sub else "", int(seq)), set()).add(exact)
        for sub, seq in sorted(by_seq):
            if len(by_seq[(sub, seq)]) > 1:
                subset = tuple(int(x) for x in sub.split(",")) if sub else None
                self._resolve_divergence(states, seq, seq, exact=True, subset=subset)
                return True
        return False

    def request_details(self, lo: int, hi: int, subset: tuple[int, ...] | None = None) -> dict[int, dict]:
        """Ask every process (every member of `subset`) for its records lo..hi (in that subset's
        stream); returns what came back within `detail_wait`."""
        members = list(subset) if subset is not None else list(range(self.n))
        rid = f"{time.time():.6f}"
        for p in members:
            try:
                self.kv.delete(f"details/{p}")
            except KVError:
                pass
        msg = {"type": "details", "lo": lo, "hi": hi, "id": rid}
        if subset is not None:
            msg["subset"] = list(subset)
        self._send_ctl(msg)
        deadline = time.monotonic() + self.detail_wait
        got: dict[int, dict] = {}
        while time.monotonic() < deadline:
            for k, v in self.kv.dir("details/").items():
                if isinstance(v, dict) and v.get("id") == rid and int(k) in members:
                    got[int(k)] = v
            if len(got) >= len(members):
                break
            time.sleep(0.05)
        return got

    def answer_details(self, msg: dict) -> None:
        lo, hi = int(msg["lo"]), int(msg["hi"])
        rec: Recorder | None = self.recorder
        if msg.get("subset") is not None:
            sub = tuple(msg["subset"])
            if self.p not in sub:
                return
            rec = self.streams.get(sub)  # None: a member with nothing dispatched there yet
        recs = []
        top = self._decided(rec, rec.snapshot(2))[0] if rec is not None else 0  # as published
        for r in (rec.records(lo, min(hi, top)) + rec.records(top, top)) if rec is not None else ():
            f, ln, fn = _site(r)
            name = self.registry.names.get(r.key, "?")
            exact = r.exact or self.registry.exact_for_key.get(r.key, 0)
            recs.append({"seq": r.seq, "key": r.key, "exact": r.exact, "name": name, "file": f, "line": ln,
                         "function": fn, "source": _source(f, ln),
                         "fields": self.registry.fields.get(exact, {}),
                         "cached": not r.exact and bool(exact)})
        self.kv.set(f"details/{self.p}", {"id": msg["id"], "records": recs, "seq": top,
                                          "settled": rec.settled if rec else 0, "compiling": self.compiling > 0,
                                          "status": self.status, "exit": self.exit_info, "pid": os.getpid(),
                                          "host": self.host})

    def _resolve_divergence(self, states: dict[int, dict], lo: int, hi: int, exact: bool = False,
                            subset: tuple[int, ...] | None = None) -> None:
        details = self.request_details(max(1, lo), hi, subset)
        records = {p: {r["seq"]: r for r in d["records"]} for p, d in details.items()}
        keyed = {p: {s: [s, r["key"]] for s, r in recs.items()} for p, recs in records.items()}
        seq = compare.first_difference(keyed, max(1, lo), hi)
        if seq is None and exact:
            # Same computation, different executables (decided on signatures, not keys).
            seq = lo
        if seq is None:
            return  # the difference is older than every ring: nothing precise to say (very rare)
        for p, d in details.items():
            r = records.get(p, {}).get(seq)
            if (r is not None and not r.get("exact") and d.get("compiling") and seq > int(d.get("settled") or 0)
                    and seq == int(d.get("seq") or 0)):
                # Its call is still on JAX's Python path, compiling: a hook may yet find that it runs
                # on this process only or over a subset, and take the record back. Look again.
                return
        others = {p: st for p, st in states.items() if subset is not None and p not in subset}
        if subset is not None:  # the members' states, numbered in the subset's stream
            states = {p: dict(st, seq=int((st.get("subsets") or {}).get(compare.subset_name(subset), {}).get("seq", 0)))
                      for p, st in states.items() if p in subset}
        info = {p: dict(st, **{k: v for k, v in details.get(p, {}).items() if k in ("pid", "host", "seq", "status")})
                for p, st in states.items()}
        rep = verdict.divergence_report(seq, info, records, self._guard_info())
        if subset is not None:
            verdict.over_subset(rep, seq, subset)
            where = compare.subset_text(subset)
            for p, st in sorted(others.items()):  # the rest of the job, for the whole picture
                rep.processes.append(ProcessReport(process_index=p, status="ok", pid=st.get("pid"),
                                                   host=st.get("host", ""), last_seq=int(st.get("seq", 0)),
                                                   location=_loc_recent(st), note=f"not one of {where}"))
            rep.processes.sort(key=lambda pr: pr.process_index)
        self._publish_verdict(rep)

    def _resolve_liveness(self, states: dict[int, dict], finding: compare.Finding) -> None:
        top = max((s.get("seq", 0) for s in states.values()), default=0)
        lo = max(1, min((s.get("seq", 0) for s in states.values()), default=1))
        details = self.request_details(lo, top) if finding.kind != "died" or len(states) > 1 else {}
        procs = []
        for p in range(self.n):
            st = states.get(p)
            d = details.get(p)
            recs = (d or {}).get("records") or []
            last = recs[-1] if recs else None
            if st is None:
                procs.append(ProcessReport(process_index=p, status="unknown", note="never published state"))
                continue
            status = "ok"
            loc = verdict.location(last) if last else _loc_recent(st)
            note = ""
            if p in finding.culprits:
                status = {"exited": "exited", "died": "died", "missing": "never-joined", "hang": "hung"}[finding.kind]
                if finding.kind == "exited" and st.get("exit"):
                    ex = st["exit"]
                    loc = Location(file=ex.get("file", ""), line=int(ex.get("line") or 0),
                                   function=ex.get("function", ""), source=ex.get("source", ""))
                    note = ex.get("error") or f"exit code {ex.get('code')}"
            elif finding.kind == "hang":
                status = "hung"
            procs.append(ProcessReport(process_index=p, status=status, pid=st.get("pid"), host=st.get("host", ""),
                                       last_seq=st.get("seq", 0), location=loc,
                                       dispatch=verdict.dispatch(last) if last else _dispatch_recent(st, self.registry),
                                       exit_code=(st.get("exit") or {}).get("code"), note=note))
        rep = Report(kind=finding.kind, summary=finding.summary, processes=procs, created=time.time(),
                     seq=finding.seq, guard=self._guard_info())
        self._publish_verdict(rep)

    def _guard_info(self) -> dict:
        from runtime_guard import __version__

        try:
            import jax

            jv = jax.__version__
        except Exception:
            jv = "?"
        return {"mode": self.settings.mode, "version": __version__, "jax": jv, "processes": self.n,
                "threshold_s": round(self.tracker.threshold(), 1)}

    # -- control channel -------------------------------------------------------------------------

    _gen = 0

    def _send_ctl(self, msg: dict) -> None:
        self._gen += 1
        msg = dict(msg, gen=self._gen)
        self.kv.set(f"ctl/{self._gen}", msg)
        self.kv.set("ctl/latest", self._gen)
        if self._gen > 2:
            try:
                self.kv.delete(f"ctl/{self._gen - 2}")
            except KVError:
                pass
        if self.p == 0 and msg["type"] == "details":  # (no watcher here; a verdict it delivers itself)
            self.answer_details(msg)

    def _publish_verdict(self, rep: Report) -> None:
        data = rep.to_dict()
        self._send_ctl({"type": "verdict", "report": data})
        self._break_barriers()
        self._deliver(data)

    def _break_barriers(self) -> None:
        """Strict mode: make the other processes' pending barriers fail at once, so their main
        threads raise instead of waiting. Joining a barrier with a conflicting participant set fails
        it for every waiter; it must come from another process (a second arrival of the waiting
        process itself does not count), so every process breaks the others' barriers."""
        try:
            states = self.kv.dir("state/")
        except KVError:
            return
        ids = {tuple(s["pending"]) for p, s in states.items()
               if isinstance(s, dict) and s.get("pending") and int(p) != self.p}
        for seq, exact, *sub in ids:
            try:
                self.kv.barrier(strict_barrier_id(seq, exact, sub[0] if sub else ""), 0.05, processes=[self.p])
            except KVError:
                pass

    def _watch_loop(self) -> None:
        gen = 1  # the next control message to read
        brisk_until = 0.0  # poll at CTL_POLL_BRISK until then: a comparison is asking questions
        while not self.stop_event.is_set() and self.verdict is None:
            try:
                latest = self.kv.get("ctl/latest")
                if not isinstance(latest, int) or latest < gen:
                    # Leaving (the last comparison's questions must be answered within the
                    # others' bounded final wait) or just asked: poll briskly, for a few seconds.
                    brisk = self.status != compare.RUNNING or time.monotonic() < brisk_until
                    self.stop_event.wait(CTL_POLL_BRISK if brisk else self.ctl_poll)
                    continue
                brisk_until = time.monotonic() + 5.0
                # Only the last two messages are kept: one we missed is gone for good (a verdict
                # is always the last message).
                gen = max(gen, latest - 1)
                while gen <= latest and self.verdict is None:
                    msg = self.kv.get(f"ctl/{gen}")
                    gen += 1
                    if isinstance(msg, dict):
                        self._on_ctl(msg)
            except KVError:
                self.stop_event.wait(self.interval)

    def _on_ctl(self, msg: dict) -> None:
        try:
            if msg.get("type") == "details":
                self.answer_details(msg)
            elif msg.get("type") == "verdict":
                first = self.verdict is None
                self._deliver(msg["report"])  # (its report written and printed: it may now leave)
                if first:
                    try:
                        self.kv.set(f"seen/{self.p}", 1)  # process 0 waits for it before leaving
                    except KVError:
                        pass
                self._break_barriers()
            elif msg.get("type") == "final":
                self.final_event.set()
                try:
                    self.kv.set(f"left/{self.p}", 1)  # process 0 waits for it before leaving
                except KVError:
                    pass
        except KVError as e:
            self._note(f"control message {msg.get('type')}: {e}")

    def wait_verdict_seen(self) -> None:
        """Process 0, about to leave after its verdict: it hosts the coordination service, and
        leaving at once would take the verdict with it before the others' watchers read it (they
        poll; a process whose service is gone is aborted by JAX). Waits, bounded, until every
        other process said it saw the verdict."""
        self._wait_acknowledged("seen/")

    def _wait_acknowledged(self, prefix: str) -> None:
        """Process 0: wait, bounded, until every other process wrote a key under `prefix`."""
        if self.p != 0 or self.n < 2:
            return
        deadline = time.monotonic() + max(3.0, 4 * self.ctl_poll)
        while time.monotonic() < deadline:
            try:
                if len(self.kv.dir(prefix)) >= self.n - 1:
                    time.sleep(0.3)  # (for them to leave first: JAX aborts a process whose service went away)
                    return
            except KVError:
                return
            time.sleep(0.05)

    def _deliver(self, report: dict) -> None:
        if self.verdict is not None:
            return
        self._fetch_collector()
        self.verdict = report
        self.verdict_event.set()
        try:
            self.on_verdict(report)
        except Exception as e:
            self._note(f"verdict handler failed: {e!r}")
        finally:
            self.verdict_handled.set()  # the report is written and printed

    def _note(self, msg: str) -> None:
        self.errors.append(msg)
        if not self.settings.quiet and len(self.errors) <= 5:
            print(f"mcjax-guard: {msg}", file=sys.stderr)


def strict_barrier_id(seq: int, exact: int, subset: str = "") -> str:
    # Sig in the id: agreeing processes meet in one round trip; different computations never meet.
    # Parity in the id: consecutive dispatches of the same executable use alternate barriers.
    # A subset's stream ("0,1") has barriers of its own, among its members.
    return f"x/{exact:x}/{seq % 2}" if not subset else f"x/{subset}/{exact:x}/{seq % 2}"


def _threads_report(p: int, th: dict, states: dict[int, dict], guard: dict) -> Report:
    """Process p dispatched a cross-process computation while another of its threads was still
    dispatching one (`Exchange._overlap_state`)."""
    first, second = th["with"], th["seq"]

    def at(r: dict) -> str:
        return f"{r['file']}:{r['line']}" if r.get("file") else "an unknown line"

    summary = (f"process {p} dispatched cross-process computations from two threads at once: "
               f"#{second['seq']} {second['name']} at {at(second)} started while another thread's "
               f"#{first['seq']} {first['name']} at {at(first)} was still being dispatched. Which "
               f"computation meets which on the other processes then depends on thread scheduling "
               f"(a deadlock, or data exchanged between the wrong computations): dispatch "
               f"cross-process work from one thread, or in an order the program fixes, not the scheduler")
    procs = []
    for q, st in sorted(states.items()):
        rec = second if q == p else None
        procs.append(ProcessReport(
            process_index=q, status="diverged" if q == p else "ok", pid=st.get("pid"), host=st.get("host", ""),
            last_seq=int(st.get("seq", 0)), location=verdict.location(rec) if rec else _loc_recent(st),
            dispatch=Dispatch(seq=int(rec["seq"]), name=rec["name"], fields={"name": rec["name"]},
                              location=verdict.location(rec)) if rec else None,
            note=(f"also in flight on another thread: #{first['seq']} {first['name']} at {at(first)}; "
                  f"{th.get('count', 1)} overlapping call(s) so far") if q == p else ""))
    return Report(kind="divergence", summary=summary, processes=procs, created=time.time(),
                  seq=int(second["seq"]), guard=guard)


def _loc_recent(st: dict) -> Location | None:
    recent = st.get("recent") or []
    if not recent:
        return None
    _, _, _, _, f, ln, fn = recent[-1]
    return Location(file=f, line=ln, function=fn, source=_source(f, ln)) if f else None


def _dispatch_recent(st: dict, registry: Registry) -> Dispatch | None:
    recent = st.get("recent") or []
    if not recent:
        return None
    seq, key, _, exact, f, ln, fn = recent[-1]
    name = registry.names.get(key, "?")
    return Dispatch(seq=seq, name=name, fields=dict(registry.fields.get(exact or registry.exact_for_key.get(key, 0), {})),
                    location=Location(file=f, line=ln, function=fn, source=_source(f, ln)) if f else None)


def _atomic_json(path: Path, data: Any) -> None:
    tmp = path.with_name(path.name + f".{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, default=str))
    os.replace(tmp, path)
