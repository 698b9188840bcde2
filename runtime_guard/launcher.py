"""`mcjax-guard`'s supervisor: start the guarded program, watch it, report, stop the group.

Two ways to run:
  - `-n N`: start N local processes of the program (CPU devices, coordinator on a free loopback
    port, `jax.distributed.initialize()` with no arguments works inside them), to reproduce a
    multi-host bug on one machine;
  - without `-n`: wrap the one process it is given (under Slurm, Open MPI or a TPU pod each host
    runs `mcjax-guard python train.py`), and JAX's own cluster auto-detection applies.

The supervisor is the parent of the program, so it may ptrace it (py-spy) for stacks. It never
talks to the coordination service itself: the guard inside the processes publishes, compares
and writes its verdict to a private state directory, which the supervisor watches along with the
processes' exit statuses. On a verdict or an unexpected death it collects stacks, writes the
report (before killing anything), prints it, SIGKILLs the group (JAX catches SIGTERM) and exits
with EXIT_DETECTED. A correct program exits with its own status and leaves no report.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from runtime_guard import local_job, progress
from runtime_guard.report.model import Dispatch, Location, ProcessReport, Report
from runtime_guard.settings import ENV, EXIT_DETECTED, GuardSettings

# Strict mode stops every process with DivergenceError before the collective; they get this long to
# unwind and exit by themselves before being killed.
STRICT_EXIT_GRACE = 10.0
ALIVE_EVERY = 0.5  # s between the supervisor's "these processes are running" notes


class UsageError(ValueError):
    pass


@dataclass
class Command:
    python: str
    python_opts: list[str]
    target: list[str]  # ["train.py", *args] or ["-m", "pkg.mod", *args] or ["-c", "code", *args]

    def argv(self) -> list[str]:
        return [self.python, *self.python_opts, "-m", "runtime_guard.bootstrap", *self.target]

    def display(self) -> str:
        return " ".join([os.path.basename(self.python), *self.target])

    def program(self) -> str:
        """`train.py`, `pkg.mod` (-m) or `-c`: what a run is named after."""
        first = self.target[0]
        return self.target[1] if first == "-m" else first if first == "-c" else os.path.basename(first)


def parse_command(cmd: list[str]) -> Command:
    """`python [opts] train.py args`, `python -m mod args`, or just `train.py args`."""
    if not cmd:
        raise UsageError("no program given: mcjax-guard [options] python train.py [args]")
    first = cmd[0]
    if os.path.basename(first).startswith("python"):
        # A bare `python` means "the Python I run in": it has runtime_guard, which the guarded
        # process imports first. An explicit path is taken as given.
        python = sys.executable if os.sep not in first else first
        rest = cmd[1:]
    elif first.endswith(".py"):
        python, rest = sys.executable, cmd
    else:
        raise UsageError(f"mcjax-guard runs Python programs (python train.py ...), not {first!r}")
    opts: list[str] = []
    while rest and rest[0].startswith("-") and rest[0] not in ("-m", "-c"):
        opts.append(rest.pop(0))
    if not rest:
        raise UsageError("no script or -m module given after the python interpreter")
    if rest[0] in ("-m", "-c") and len(rest) < 2:
        raise UsageError(f"{rest[0]} needs an argument")
    if rest[0] not in ("-m", "-c") and not os.path.exists(rest[0]):
        raise UsageError(f"no such script: {rest[0]}")
    return Command(python, opts, rest)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def default_report_dir() -> str:
    return os.path.join("mcjax-reports", time.strftime("%Y%m%d-%H%M%S"))


@dataclass
class Options:
    processes: int | None = None  # None: wrap one process, JAX auto-detects the cluster
    # With -n: CPU devices per process; None = the caller's JAX_NUM_CPU_DEVICES or XLA_FLAGS device
    # count, else local_job.DEFAULT_DEVICES (see local_job.devices_per_process).
    devices_per_process: int | None = None
    # With -n: every process gets the caller's PYTHONHASHSEED (default: its own, as hosts have).
    keep_hash_seed: bool = False
    native: bool = False
    locals: bool = False
    collective_timeout: float = 600.0  # XLA CPU collectives give up after this (backstop)
    snapshots: int = 2
    snapshot_interval: float = 2.0
    extra_env: dict[str, str] = field(default_factory=dict)
    # With -n: None = the processes write to the supervisor's stdout/stderr; a directory = each
    # process's stdout and stderr go to DIR/process-<i>.log (the pytest plugin shows them per process).
    output_dir: str | None = None
    # With -n and no output_dir: prefix each line of process i's output with "[i] " (so the
    # interleaved output of N processes stays readable), and optionally drop native log lines
    # (glog/absl, C++ check-failure traces, gloo) that bury the report (the demo does).
    prefix_output: bool = True
    drop_native_logs: bool = False
    # Wall-clock budget of the whole run in seconds (None = none). Past it the supervisor reports a
    # hang with stacks and stops the group, whatever the guard saw (a bound for test runs).
    deadline: float | None = None


@dataclass
class Child:
    index: int
    proc: subprocess.Popen
    exited: int | None = None


def _set_pdeathsig() -> None:
    # Children die with the supervisor, so a killed supervisor never leaves a job hanging.
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:
        pass


class Supervisor:
    def __init__(self, command: Command, settings: GuardSettings, options: Options) -> None:
        self.command = command
        self.options = options
        self.state_dir = tempfile.mkdtemp(prefix="mcjax-state-")
        self.report_dir = settings.report_dir or default_report_dir()
        self.settings = replace(settings, report_dir=self.report_dir, state_dir=self.state_dir)
        if options.processes is not None:
            # Every process is our child: we see a death the moment it happens. Heartbeats then only
            # need to catch a frozen process, which the hang threshold does too; a long pause (a
            # process holding the GIL in a big C call) must not be mistaken for a death.
            self.settings = replace(self.settings, died_after=max(self.settings.died_after, 30.0))
        self.devices = (local_job.devices_per_process(options.devices_per_process, {**os.environ, **options.extra_env})
                        if options.processes is not None else None)
        self.children: list[Child] = []
        self._pumps: list[threading.Thread] = []
        self._status = progress.StatusLine(False)
        self._status_at = 0.0
        self._collector: Any = None
        self._collector_failed = False
        self._alive_at = 0.0
        self._alive_sender: Any = None
        self._sighted: dict[int, int] = {}  # process index -> pid, as last reported running
        self._ended: dict[int, float] = {}  # process index -> when this supervisor saw it end
        self._stop = False
        self._snapshot = False
        self.report_paths: dict[str, Path] = {}
        self.report: Report | None = None
        self._separate_line = ""

    # -- processes ------------------------------------------------------------------------------

    def _env(self, index: int, n: int | None, port: int | None) -> dict[str, str]:
        env = dict(os.environ)
        env.update(self.options.extra_env)
        if n is not None and port is not None and self.devices is not None:
            env = local_job.job_env(env, index, n, port, self.devices, self.options.collective_timeout,
                                    self.options.keep_hash_seed)
        env[ENV] = self.settings.to_env()
        env["MCJAX_SUPERVISED"] = "1"
        # Workers the program starts itself (a test harness, multiprocessing) get a guard too.
        from runtime_guard.workers import worker_env

        return worker_env(env)

    def start(self) -> None:
        n = self.options.processes
        addr = free_port() if n else None
        self._started = time.monotonic()
        for i in range(n or 1):
            out = None
            if self.options.output_dir:
                out = open(os.path.join(self.options.output_dir, f"process-{i}.log"), "wb")
            pump = out is None and n is not None and (self.options.prefix_output or self.options.drop_native_logs)
            try:
                proc = subprocess.Popen(self.command.argv(), env=self._env(i, n, addr), start_new_session=True,
                                        preexec_fn=_set_pdeathsig,
                                        stdout=subprocess.PIPE if pump else out,
                                        stderr=subprocess.PIPE if pump else (subprocess.STDOUT if out is not None else None))
            finally:
                if out is not None:
                    out.close()  # the child has its own copy
            if pump:
                prefix = f"[{i}] " if self.options.prefix_output else ""
                for src, dst in ((proc.stdout, "stdout"), (proc.stderr, "stderr")):
                    t = threading.Thread(target=_pump, args=(src, dst, prefix, self.options.drop_native_logs,
                                                             self._status), daemon=True)
                    t.start()
                    self._pumps.append(t)
            self.children.append(Child(i, proc))

    def kill_all(self) -> None:
        for c in self.children:
            if c.proc.poll() is None:
                try:
                    os.killpg(c.proc.pid, signal.SIGKILL)
                except OSError:
                    try:
                        c.proc.kill()
                    except OSError:
                        pass
        for c in self.children:
            try:
                c.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        for t in self._pumps:
            t.join(timeout=2)

    # -- main loop -------------------------------------------------------------------------------

    def run(self) -> int:
        from runtime_guard.report.runfile import register_supervisor, unregister_supervisor

        old = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1)}
        signal.signal(signal.SIGINT, self._on_stop)
        signal.signal(signal.SIGTERM, self._on_stop)
        signal.signal(signal.SIGUSR1, self._on_snapshot)
        runfile = None
        if not self.settings.quiet:
            print(progress.banner(self.options.processes, self.devices, self.settings, self.report_dir),
                  file=sys.stderr, flush=True)
        pumped = self.options.processes is not None and not self.options.output_dir and (
            self.options.prefix_output or self.options.drop_native_logs)
        self._status = progress.StatusLine(pumped and progress.use_live_line(self.settings.quiet))
        try:
            self._status.start()
            self.start()
            from runtime_guard.causes import prewarm

            prewarm()  # a report lints in process (causes): import the linter on idle CPU
            try:
                runfile = register_supervisor(self.report_dir, num_processes=len(self.children), argv=sys.argv,
                                              pids=[c.proc.pid for c in self.children])
            except OSError as e:  # (RunDirError: another user's directory) the job runs, dump cannot find it
                self._status.write(sys.stderr, f"mcjax-guard: {e}; `mcjax-guard dump` will not see this job\n")
            return self._watch()
        finally:
            self._status.stop()
            self.kill_all()
            from runtime_guard.causes import finish_late

            finish_late(self.report, self.report_dir)  # causes that ran out of budget, now nothing waits
            if runfile is not None:
                unregister_supervisor(runfile)
            for s, h in old.items():
                signal.signal(s, h)
            if self._collector is not None:
                self._collector.stop()
            if self._alive_sender is not None:
                self._alive_sender.close()
            from runtime_guard.observe import save_run

            save_run(self.state_dir, self.command.program())  # for mcjax-lint (never raises)
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def _separate_jobs(self) -> str:
        """The line for workers that joined jobs of their own below an -n launch ("" if none),
        said once as it is first seen."""
        if self.options.processes is None:
            return ""
        if not self._separate_line:
            notes = [n for f in sorted(Path(self.state_dir).glob("separate-*.json"))
                     if isinstance(n := _read_json(f), dict)]
            if notes:
                self._separate_line = local_job.separate_job_line(notes, self.options.processes,
                                                                  self.command.display())
                self._status.write(sys.stderr, self._separate_line + "\n")
        return self._separate_line

    def _status_tick(self) -> None:
        now = time.monotonic()
        if now - self._status_at < 0.5:
            return
        self._status_at = now
        self._separate_jobs()
        try:
            alive = sum(1 for c in self.children if c.proc.poll() is None)
            self._status.update(alive, len(self.children), self._states(), self.options.processes)
        except Exception:  # the status line is an extra
            pass

    def _on_stop(self, signum: int, frame: Any) -> None:
        self._stop = True

    def _on_snapshot(self, signum: int, frame: Any) -> None:
        self._snapshot = True

    def _watch(self) -> int:
        verdict_path = Path(self.state_dir) / "verdict.json"
        while True:
            if verdict_path.exists():
                verdict = _read_json(verdict_path)
                if verdict is not None:
                    return self._handle_verdict(Report.from_dict(verdict))
            self._maybe_start_collector()
            self._liveness_tick()
            self._status_tick()
            if self._alive_sender is not None and self._alive_sender.verdict is not None:
                # Process 0's host has a verdict that this host's process did not deliver (frozen,
                # or its guard cannot reach the coordination service): act on it here.
                return self._handle_verdict(Report.from_dict(self._alive_sender.verdict))
            running = 0
            for c in self.children:
                if c.exited is None:
                    code = c.proc.poll()
                    if code is None:
                        running += 1
                        continue
                    c.exited = code
                    if code < 0 and not verdict_path.exists():
                        note = self._note_end(c)
                        try:
                            return self._handle_death(c)
                        finally:
                            if note is not None:
                                note.join(2.5)  # before the channel closes
            if running == 0:
                if verdict_path.exists():
                    continue
                # Everyone is gone. Processes can diverge and still finish (collectives that
                # happen to line up return wrong numbers): compare the flight records once more.
                rep = self._flight_divergence(subsets=True)
                if rep is not None:
                    rep.notes.append("every process exited before the guard's comparison round; found in the "
                                     "flight records")
                    self._finish(rep, 1, False)
                    return EXIT_DETECTED
                codes = [c.exited for c in self.children]
                self._status.stop()
                line = progress.summary(self._states(), self.options.processes, codes)
                if self._separate_jobs():
                    line = ("mcjax-guard: nothing compared: the program's own jobs (above) are not checked under -n"
                            + (f" (the program exited with status {next(x for x in codes if x)})" if any(codes) else ""))
                if line and not self.settings.quiet:
                    print(line, file=sys.stderr, flush=True)
                return next((int(x) for x in codes if x), 0)
            if self.options.deadline is not None and time.monotonic() - self._started > self.options.deadline:
                return self._handle_deadline()
            if self._stop:
                self._status.stop()
                print("mcjax-guard: interrupted; stopping the processes", file=sys.stderr)
                self.kill_all()
                return 130
            if self._snapshot:
                self._snapshot = False
                self._write_snapshot()
            time.sleep(0.05)

    # -- reports ----------------------------------------------------------------------------------

    def _states(self) -> dict[int, dict]:
        out = {}
        for f in Path(self.state_dir).glob("p*.json"):
            st = _read_json(f)
            if isinstance(st, dict) and "p" in st:
                out[int(st["p"])] = st
        return out

    def _settled_states(self, rep: Report, wait: float) -> dict[int, dict]:
        """The states, once no survivor in `rep` still says `running`, or after `wait` seconds."""
        deadline = time.monotonic() + wait
        while True:
            states = self._states()
            running = [p for p in rep.processes if p.status != "died"
                       and states.get(p.process_index, {}).get("status") == "running"]
            if not running or time.monotonic() >= deadline:
                return states
            time.sleep(0.1)

    def _index_of(self, child: Child, states: dict[int, dict], guess: bool = True) -> int | None:
        """The child's process index, from the state it published; else its launch index (right
        with `-n`; wrapping one process it is 0 whatever the index), or None without `guess`."""
        for p, st in states.items():
            if st.get("pid") == child.proc.pid:
                return p
        return child.index if guess else None

    def _targets(self, states: dict[int, dict]) -> list[tuple[int, int, str | None]]:
        from runtime_guard.workers import descendants

        # A child that is not a process of the job but started them (a test harness, a
        # multiprocessing parent): its guarded workers stand for it.
        workers = descendants(states, {c.proc.pid for c in self.children})
        out = []
        for c in self.children:
            if c.proc.poll() is None and (not workers or self._index_of(c, states, guess=False) is not None):
                out.append((self._index_of(c, states), c.proc.pid, None))
        out += [(p, pid, None) for pid, p in workers.items()]
        return [(p, pid, str(fb) if fb.exists() else None)
                for p, pid, _ in out for fb in [Path(self.state_dir) / f"faulthandler-{pid}.txt"]]

    def _add_crash_stacks(self, stacks: dict, states: dict[int, dict]) -> None:
        """Processes that died of a fatal signal left their stacks in their crash file."""
        from runtime_guard.stacks.fallback import read_crash_dump

        for c in self.children:
            if c.proc.poll() is None:
                continue
            snap = read_crash_dump(Path(self.state_dir) / f"crash-{c.proc.pid}.txt")
            idx = self._index_of(c, states)
            if snap is not None and idx is not None and not any(s.threads for s in stacks.get(idx, [])):
                stacks[idx] = [snap]

    def _finish(self, rep: Report, snapshots: int, native: bool | str, take_stacks: bool = True) -> None:
        from runtime_guard.causes import prewarm
        from runtime_guard.postmortem import write_postmortem
        from runtime_guard.report.writer import print_report, write_report
        from runtime_guard.stacks.collect import collect_stacks

        prewarm(urgent=True)  # the report's causes lint in process: import the linter now
        self._status.stop()
        if self._collector is not None:  # tell the other hosts now, so they take stacks meanwhile
            try:
                self._collector.set_verdict(rep.to_dict())
            except Exception:
                pass
        states = self._states()
        for p in rep.processes:
            st = states.get(p.process_index)
            if p.pid is None and st:
                p.pid = st.get("pid")
        try:
            stacks = collect_stacks(self._targets(states), native=native, snapshots=snapshots,
                                    interval=self.options.snapshot_interval,
                                    locals=self.options.locals) if take_stacks else {}
            if take_stacks:
                self._add_crash_stacks(stacks, states)
            if rep.kind == "died":
                # A survivor whose collective with the dead process failed is leaving, not `ok`:
                # taking stacks gave it time to publish that; give it up to a second more.
                _mark_leaving(rep, self._settled_states(rep, 1.0))
            for c in self.children:
                # Processes that ended meanwhile (gloo aborts both sides of a mismatched
                # collective): their exit status, as the report's table shows it.
                code = c.proc.poll()
                i = self._index_of(c, states)
                for pr in rep.processes:
                    if code is not None and pr.process_index == i and pr.exit_code is None:
                        pr.exit_code = code
            notes, missing = list(rep.notes), []
            if self.options.processes is None and len(rep.processes) > 1:
                missing = self._exchange_stacks(rep, stacks, notes)
            report, paths = write_postmortem(
                rep.kind, rep.processes, stacks, self.report_dir, notes, headline=rep.summary, seq=rep.seq,
                differing_fields=rep.differing_fields, guard=rep.guard, missing_hosts=missing)
        except Exception as e:  # stacks are extra: the guard's verdict must still reach the user
            rep.notes.append(f"stack collection failed: {e!r}")
            report, paths = rep, write_report(rep, self.report_dir)
        self.report, self.report_paths = report, paths
        try:
            print_report(report)
        except Exception:
            from runtime_guard.report.render_text import render_text

            print(render_text(report), file=sys.stderr)
        where = paths.get("html") or paths.get("json")
        if where is not None:
            print(f"mcjax-guard: report written to {where.parent}/ (report.json, report.txt, report.html)",
                  file=sys.stderr)

    # -- across hosts (each host's supervisor wraps its own process) ------------------------------

    def _maybe_start_collector(self) -> None:
        """On the host of process 0: run the stack collector and leave its address for the guard,
        which publishes it to the other hosts through the coordination service."""
        if self.options.processes is not None or self._collector is not None or self._collector_failed:
            return
        st = _read_json(Path(self.state_dir) / "p0.json")
        if not isinstance(st, dict) or int(st.get("n") or 1) < 2:
            return
        import secrets

        from runtime_guard.stacks.remote import StackCollectorServer, bind_host_for

        try:
            token = secrets.token_hex(16)
            self._collector = StackCollectorServer(bind_host_for(st.get("coordinator") or "127.0.0.1"), token)
            from runtime_guard.exchange import _atomic_json

            _atomic_json(Path(self.state_dir) / "collector.json", {"address": self._collector.address, "token": token})
        except Exception as e:  # without it, each host still writes its own report
            self._collector_failed = True
            print(f"mcjax-guard: no cross-host stack collector: {e!r}", file=sys.stderr)

    def _liveness_tick(self) -> None:
        """Say which processes are running, for process 0's comparator: a process whose guard
        threads stop publishing while its OS process runs on is frozen (a C call holding the GIL,
        a debugger), not dead, and must not be reported as `died` (which stops the job).

        Process 0's host (and a local group) writes `alive.json` to the state directory that
        process 0's guard reads; other hosts' supervisors send theirs to process 0's collector.
        All times are process 0's host's monotonic clock (system-wide on Linux: a wall-clock step
        must not make a dead process look alive).

        A process's end is said outright (`gone`: its OS process exited or became a zombie), never
        left to be inferred from sightings that stop: those stop too when this supervisor, or the
        way to process 0's host, is slow (a loaded machine), and a frozen process would be called
        dead."""
        now = time.monotonic()
        if now - self._alive_at < ALIVE_EVERY:
            return
        self._alive_at = now
        try:
            from runtime_guard.procutil import pid_running

            states, local_group = self._states(), self.options.processes is not None
            running: dict[int, int] = {}  # index -> pid
            for c in self.children:
                p = self._index_of(c, states, guess=local_group)
                if p is None:
                    continue
                if c.exited is None and pid_running(c.proc.pid):
                    running[p] = c.proc.pid
                else:
                    self._ended.setdefault(p, now)
            if not local_group:  # workers the program started itself (see workers.descendants)
                from runtime_guard.workers import descendants

                running.update({p: pid for pid, p in descendants(states, {c.proc.pid for c in self.children}).items()
                                if pid_running(pid)})
            for p, pid in self._sighted.items():  # (a worker that ended is no descendant any more)
                if p not in running and not pid_running(pid):
                    self._ended.setdefault(p, now)
            self._sighted.update(running)
            local = sorted(running)
            if self.options.processes is not None or self._collector is not None:
                alive = dict(self._collector.alive_times()) if self._collector is not None else {}
                alive.update({p: now for p in local})
                gone = dict(self._collector.gone_times()) if self._collector is not None else {}
                gone.update(self._ended)
                from runtime_guard.exchange import _atomic_json

                _atomic_json(Path(self.state_dir) / "alive.json",
                             {"alive": {str(p): t for p, t in alive.items() if p not in self._ended},
                              "gone": {str(p): t for p, t in gone.items()}})
            elif local or self._ended:
                sender = self._sender()
                if sender is not None:
                    sender.send(local, gone=self._ended)
        except Exception as e:  # liveness is an extra: without it a frozen process may be called dead
            if not getattr(self, "_alive_warned", False):
                self._alive_warned = True
                print(f"mcjax-guard: cannot report process liveness: {e!r}", file=sys.stderr)

    def _sender(self) -> Any:
        """The liveness channel to process 0's collector, once its address has arrived."""
        if self._alive_sender is None:
            info = _read_json(Path(self.state_dir) / "collector.json")
            if not isinstance(info, dict):
                return None
            from runtime_guard.stacks.remote import AliveSender

            self._alive_sender = AliveSender(info["address"], info["token"])
        return self._alive_sender

    def _note_end(self, dead: Child) -> threading.Thread | None:
        """Tell process 0's host at once that `dead` ended (its comparator names the death from
        this, not from silence); returns the sending thread, to join before the channel closes."""
        try:
            states = self._states()
            p = self._index_of(dead, states, guess=self.options.processes is not None)
            if p is None:
                return None
            self._ended.setdefault(p, time.monotonic())
            if self.options.processes is not None or self._collector is not None:
                self._alive_at = 0.0
                self._liveness_tick()  # alive.json, read by process 0's guard on this host
                return None
            sender = self._sender()
            if sender is None:
                return None
            from runtime_guard.procutil import pid_running

            local = [q for q, pid in self._sighted.items() if q not in self._ended and pid_running(pid)]
            return sender.send(local, gone=self._ended, force=True)
        except Exception:  # liveness is an extra
            return None

    def _exchange_stacks(self, rep: Report, stacks: dict, notes: list[str]) -> list[str]:
        """Process 0's host waits for the other hosts' stacks; the others send theirs. Returns the
        processes whose stacks never came (listed as missing, never waited on forever)."""
        report_id = f"{rep.kind}:{rep.seq}"
        local = set(stacks)
        if self._collector is not None:
            # Processes of this host that ended have no stacks to wait for.
            here = {p for p, st in self._states().items() if st.get("host") == socket.gethostname()}
            others = {p.process_index for p in rep.processes} - local - here
            got = self._collector.wait_processes(report_id, others, 15.0)
            for procs in got.values():
                for pr in procs:
                    if pr.snapshots:
                        stacks[pr.process_index] = pr.snapshots
            return [f"of process {i}" for i in sorted(others - set(stacks))]
        info = _read_json(Path(self.state_dir) / "collector.json")
        if not isinstance(info, dict):
            notes.append("stacks of this host only: the address of process 0's stack collector never arrived")
            return []
        from runtime_guard.stacks.remote import send_stacks

        mine = [ProcessReport(process_index=i, snapshots=snaps, host=socket.gethostname()) for i, snaps in stacks.items()]
        try:
            send_stacks(info["address"], info["token"], f"{socket.gethostname()}/{os.getpid()}", report_id, mine,
                        timeout=5.0)
            notes.append(f"stacks also sent to process 0's host ({info['address']}), whose report covers every host")
        except Exception as e:
            notes.append(f"could not send stacks to process 0's host ({info.get('address')}): {e!r}")
        return []

    def _handle_verdict(self, rep: Report) -> int:
        if rep.kind in ("exited", "missing", "hang", "died"):
            # The guard's exchange sees only the last records each process published; the flight
            # files of this host's processes have them all. Processes stuck, or left behind, because
            # they dispatched different computations earlier are a divergence: report that.
            div = self._flight_divergence()
            if div is not None and (rep.seq is None or div.seq is None or div.seq <= rep.seq):
                div.notes.append(f"found in the flight records; the guard had reported: {rep.summary}")
                rep = div
        hang = rep.kind in ("hang", "missing")
        native: bool | str = "first" if (hang or self.options.native) else False
        # Strict mode stopped every process before the collective and they are now unwinding the
        # DivergenceError: their stacks would show exception handling, not the divergence.
        strict_stop = self.settings.mode == "strict" and rep.kind == "divergence"
        if strict_stop:
            rep.notes.append("strict mode: every process raised DivergenceError before the collective; "
                             "no stacks taken (they would show the exception being handled)")
        self._finish(rep, self.options.snapshots if hang else 1, native, take_stacks=not strict_stop)
        if strict_stop:
            # They are raising DivergenceError before the collective, not hanging: let them unwind
            # and exit on their own (the program, or a test runner, reports it), within a bound.
            self._wait_children(STRICT_EXIT_GRACE)
        if self.settings.kill:
            self.kill_all()
        return EXIT_DETECTED

    def _wait_children(self, limit: float) -> None:
        deadline = time.monotonic() + limit
        for c in self.children:
            try:
                c.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                return

    def _flight_streams(self) -> dict[tuple[int, ...] | None, tuple[dict[int, dict], dict[int, dict[int, dict]]]]:
        """Every local process's dispatch records from its flight files (alive or dead), per
        stream (None: computations over every process; else the subset a stream runs over):
        (info, records) with info[p] = {pid, seq, host, status}, records[p][seq] = record."""
        from runtime_guard import flight

        states = self._states()
        out: dict[tuple[int, ...] | None, tuple[dict[int, dict], dict[int, dict[int, dict]]]] = {}
        for f in sorted(Path(self.state_dir).glob("flight-*.bin")):
            try:
                fr = flight.read(f)
            except (OSError, ValueError):
                continue
            p = int(fr["process"])
            if p < 0:
                continue  # never joined the distributed runtime
            info, records = out.setdefault(fr["subset"], ({}, {}))
            records[p] = {r["seq"]: r for r in fr["records"]}
            st = states.get(p, {})
            info[p] = {"pid": fr["pid"], "seq": fr["seq"], "host": st.get("host", ""),
                       "status": st.get("status", "running")}
        return out

    def _flight_records(self) -> tuple[dict[int, dict], dict[int, dict[int, dict]]]:
        """The main stream's records (computations over every process): see `_flight_streams`."""
        return self._flight_streams().get(None, ({}, {}))

    def _flight_divergence(self, subsets: bool = False, streams: dict | None = None) -> Report | None:
        """The first divergence in the flight records of the main stream; with `subsets`, then in
        each subset's stream among this host's members of it. `streams`: `_flight_streams()`, if
        already read."""
        from runtime_guard import verdict

        streams = self._flight_streams() if streams is None else streams
        for sub in [None, *sorted(k for k in streams if k is not None)] if subsets else [None]:
            info, records = streams.get(sub, ({}, {}))
            seq = verdict.first_divergence(records)
            if seq is not None:
                rep = verdict.divergence_report(seq, info, records, {"mode": self.settings.mode,
                                                                     "source": "flight records"})
                return rep if sub is None else verdict.over_subset(rep, seq, sub)
        return None

    def _handle_death(self, dead: Child) -> int:
        from runtime_guard import compare, verdict

        states = self._states()
        idx = self._index_of(dead, states)
        sig = -int(dead.exited or 0)
        try:
            signame = signal.Signals(sig).name
        except ValueError:
            signame = f"signal {sig}"
        # A crash is often the consequence of a divergence (gloo aborts a process whose peer sent
        # a collective of another size): look for that first.
        time.sleep(0.2)  # let the survivors' last records land
        streams = self._flight_streams()
        div = self._flight_divergence(subsets=True, streams=streams)
        if div is not None:
            div.notes.append(f"process {idx} then died ({signame}), most likely because of the mismatched "
                             f"collective (gloo aborts on a size mismatch; NCCL would hang)")
            for pr in div.processes:
                if pr.process_index == idx:
                    pr.exit_code = dead.exited
            self._finish(div, 1, self.options.native)
            if self.settings.kill:
                self.kill_all()
            return EXIT_DETECTED
        info, records = streams.get(None, ({}, {}))
        st = states.get(idx, {})
        seq = int(info.get(idx, {}).get("seq", st.get("seq", 0)))
        # Its computations over subsets of the processes (pipeline stages): their own numbering.
        subs = {sub: recs[idx] for sub, (_, recs) in streams.items() if sub is not None and recs.get(idx)}
        procs = []
        for c in self.children:
            i = self._index_of(c, states)
            cst = states.get(i, {})
            pr = ProcessReport(process_index=i, pid=c.proc.pid, status="ok", last_seq=int(cst.get("seq", 0)),
                               host=cst.get("host", ""))
            _fill_last(pr, cst)
            recs = records.get(i)
            if recs:
                pr.last_seq = max(recs)
            # Its last dispatch in any stream (a pipeline stage's computations have their own):
            # records carry the clock of their stream's last fold, a tie goes to a subset's.
            lasts = [by_p[i][max(by_p[i])] for sub, (_, by_p) in streams.items() if sub is not None and by_p.get(i)]
            if recs:
                lasts.append(recs[max(recs)])
            if lasts:
                last = max(lasts, key=lambda r: r.get("t") or 0.0)
                pr.dispatch = verdict.dispatch(last)
                pr.location = verdict.location(last) or pr.location
            if c is dead:
                pr.status, pr.exit_code, pr.note = "died", dead.exited, f"killed by {signame}"
            procs.append(pr)
        if subs and not seq:
            # Only computations over subsets (a pipeline stage): those members wait for it.
            where = "; ".join(f"after dispatch #{max(r)} over {compare.subset_text(sub)}" for sub, r in sorted(subs.items()))
            partners = sorted({q for sub in subs for q in sub if q != idx})
            who = compare.subset_text(tuple(partners)) if len(partners) > 1 else f"process {partners[0]}"
            summary = f"process {idx} died ({signame}) {where}; {who} will wait for it in their next collective with it"
        else:
            summary = f"process {idx} died ({signame}) after dispatch #{seq}"
            if subs:
                summary += " (" + "; ".join(f"#{max(r)} over {compare.subset_text(sub)}" for sub, r in sorted(subs.items())) + ")"
            summary += "; the others will wait for it in their next collective"
        rep = Report(kind="died", summary=summary, processes=procs, created=time.time(),
                     seq=seq + 1 if seq or not subs else None, guard={"mode": self.settings.mode})
        if subs:
            rep.notes.append("Dispatch numbers over a subset of the processes (a sub-mesh) count only the "
                             "computations over exactly those processes.")
        self._finish(rep, 1, self.options.native)
        if self.settings.kill:
            self.kill_all()
        return EXIT_DETECTED

    def _handle_deadline(self) -> int:
        """The run outlived `Options.deadline`: a hang report with stacks, then stop the group."""
        states = self._states()
        _, records = self._flight_records()
        procs = []
        for c in self.children:
            i = self._index_of(c, states)
            st = states.get(i, {})
            code = c.proc.poll()
            pr = ProcessReport(process_index=i, pid=c.proc.pid, status="hung" if code is None else "exited",
                               last_seq=int(st.get("seq", 0)), host=st.get("host", ""), exit_code=code)
            _fill_last(pr, st)
            recs = records.get(i)
            if recs and pr.dispatch is None:
                from runtime_guard import verdict

                last = recs[max(recs)]
                pr.dispatch, pr.last_seq = verdict.dispatch(last), int(last["seq"])
                pr.location = verdict.location(last) or pr.location
            procs.append(pr)
        running = [p.process_index for p in procs if p.status == "hung"]
        rep = Report(kind="hang", summary=f"the run did not finish within its {self.options.deadline:g} s budget; "
                     f"process(es) {', '.join(map(str, running)) or 'none'} still running", processes=procs,
                     created=time.time(), guard={"mode": self.settings.mode})
        self._finish(rep, self.options.snapshots, "first")
        self.kill_all()
        return EXIT_DETECTED

    def _write_snapshot(self) -> None:
        from runtime_guard.postmortem import collect_and_write
        from runtime_guard.report.runfile import new_snapshot_dir

        states = self._states()
        procs = []
        for c in self.children:
            i = self._index_of(c, states)
            pr = ProcessReport(process_index=i, pid=c.proc.pid, last_seq=int(states.get(i, {}).get("seq", 0)))
            _fill_last(pr, states.get(i, {}))
            procs.append(pr)
        try:
            out = new_snapshot_dir(self.report_dir)
            _, paths = collect_and_write("snapshot", procs, self._targets(states), out, headline="snapshot on request",
                                         native=self.options.native, snapshots=1)
            self._status.write(sys.stderr, f"mcjax-guard: snapshot written to {out}/\n")
        except Exception as e:
            self._status.write(sys.stderr, f"mcjax-guard: snapshot failed: {e!r}\n")


_NATIVE_LOG = re.compile(r"^([EFWI]\d{4} \d\d:\d\d|\*\*\* Check failure|\s+@\s+0x|terminate called|\s+what\(\):|"
                         r"\[Gloo\]|Additional GRPC error|:UNKNOWN:Error received|FATAL: exception not rethrown)")


def _pump(src: Any, dst: str, prefix: str, drop_native: bool, status: progress.StatusLine) -> None:
    """Copy a child's output line by line to sys.<dst>, prefixed with its process index (above
    the live status line while there is one)."""
    for raw in iter(src.readline, b""):
        line = raw.decode(errors="replace")
        if drop_native and _NATIVE_LOG.match(line):
            continue
        try:
            status.write(getattr(sys, dst), prefix + line)
        except (OSError, ValueError):
            pass
    src.close()


def _fill_last(pr: ProcessReport, st: dict) -> None:
    last = st.get("last")
    if not last:
        return
    loc = Location(file=last["file"], line=int(last["line"]), function=last.get("function", ""),
                   source=last.get("source", "")) if last.get("file") else None
    pr.dispatch = Dispatch(seq=int(last["seq"]), name=last.get("name", "?"), fields=dict(last.get("fields") or {}),
                           location=loc)
    pr.location = pr.location or loc


def _mark_leaving(rep: Report, states: dict[int, dict]) -> None:
    """Survivors of a death that have since left the program: status `exited`, located where they
    left, and named in the summary (their stacks show only the guard's exit path)."""
    left = []
    for pr in rep.processes:
        st = states.get(pr.process_index) or {}
        info = st.get("exit") or {}
        if pr.status != "ok" or st.get("status") not in ("exited", "failed"):
            continue
        pr.status = "exited"
        error = info.get("error") or ""
        pr.note = f"left the program after the death: {error}" if error else "left the program after the death"
        if info.get("file"):
            pr.location = Location(file=info["file"], line=int(info.get("line") or 0),
                                   function=info.get("function", ""), source=info.get("source", ""))
            left.append(f"process {pr.process_index} left at {Path(info['file']).name}:{pr.location.line}"
                        + (f" ({error.splitlines()[0][:160]})" if error else ""))
        else:
            left.append(f"process {pr.process_index} left the program")
    if left:
        if all(pr.status in ("died", "exited") for pr in rep.processes):
            rep.summary = rep.summary.replace("; the others will wait for it in their next collective", "")
        rep.summary += "; " + "; ".join(left)


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
