"""pytest plugin: run a test in N real JAX processes under the mcjax guard (registered via pytest11).

    @pytest.mark.mcjax(processes=2)
    def test_psum(mcjax_process_index):
        ...  # runs in 2 JAX processes; jax.distributed is already initialized

How it works. In the pytest the user runs (the *parent*), a marked test is not run in-process:
`pytest_runtest_protocol` starts the guard's `Supervisor` with N processes, each a *worker* pytest
(`python -m pytest FILE::TEST --mcjax-worker RUNDIR`) that re-collects this one node id — so
fixtures, conftests and parametrization work as usual — initializes `jax.distributed` before the
test's fixtures, runs setup/call/teardown, and appends each phase's report (pytest's own
serializable form, the one xdist ships) to `RUNDIR/process-<i>.jsonl`. The parent then emits one
setup/call/teardown report: passed only when every process passed; otherwise the guard's report
(divergence, early exit, death, hang: which process, which dispatch, which line), each failing
process's traceback and each process's output, labelled by process.

The mark's `timeout` bounds the whole multi-process run (the supervisor's deadline); the guard
reports a hang once no process has made progress for half of it. Worker mode never re-spawns.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import pytest

MARK = "mcjax"
MARK_DEFAULTS: dict[str, Any] = {"processes": 2, "devices_per_process": 1, "mode": "strict", "timeout": 60.0}
_LOG_TAIL = 200  # lines of each process's own output shown on a failure
_PROGRESS = re.compile(r"^[.FEsxXp]+\s*(\[\s*\d+%\])?\s*$")


# -- options, marker, fixtures ---------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    g = parser.getgroup("mcjax", "mcjax: multi-process JAX tests under the guard")
    g.addoption("--mcjax-processes", type=int, default=None, metavar="N",
                help="run every @pytest.mark.mcjax test in N processes (overrides the mark)")
    g.addoption("--mcjax-mode", choices=("fast", "strict"), default=None,
                help="guard mode for @pytest.mark.mcjax tests (overrides the mark; default strict)")
    g.addoption("--mcjax-timeout", type=float, default=None, metavar="SECONDS",
                help="bound every @pytest.mark.mcjax test's multi-process run by SECONDS (overrides "
                     "the mark's timeout; e.g. longer on a slow CI machine)")
    g.addoption("--mcjax-report-dir", default=None, metavar="DIR",
                help="save each failing mcjax test's guard report under DIR/<test id>/ "
                     "(default: the test's directory under pytest's basetemp)")
    g.addoption("--mcjax-lint", action="store_true", default=False,
                help="also run mcjax-lint on the collected test files and the package under test, "
                     "one test item per file")
    # Internal: set by the parent on the worker pytests it starts.
    g.addoption("--mcjax-worker", default=None, metavar="RUNDIR", help=_hidden())
    g.addoption("--mcjax-worker-node", default=None, metavar="NODEID", help=_hidden())
    parser.addini("mcjax_lint_paths", type="paths", default=[],
                  help="what --mcjax-lint checks besides the collected test files (default: the "
                       "packages at the root, or under src/)")


def _hidden() -> str:
    import argparse

    return argparse.SUPPRESS


@pytest.hookimpl(tryfirst=True)  # before tmpdir's: a worker sets its basetemp
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "mcjax(processes=2, devices_per_process=1, mode='strict', timeout=60): "
        "run this test in N real JAX processes under the mcjax guard",
    )
    config.addinivalue_line("markers", "mcjax_lint: an mcjax-lint check added by --mcjax-lint")
    if _is_worker(config):
        config.pluginmanager.register(_Worker(config), "mcjax-worker")


def _is_worker(config: pytest.Config) -> bool:
    return bool(config.getoption("mcjax_worker", None))


@pytest.fixture
def mcjax_process_index(request: pytest.FixtureRequest) -> int:
    """This process's index (0..N-1) in a @pytest.mark.mcjax test."""
    _require_worker(request, "mcjax_process_index")
    import jax

    return jax.process_index()


@pytest.fixture
def mcjax_process_count(request: pytest.FixtureRequest) -> int:
    """The number of JAX processes running a @pytest.mark.mcjax test."""
    _require_worker(request, "mcjax_process_count")
    import jax

    return jax.process_count()


def _require_worker(request: pytest.FixtureRequest, name: str) -> None:
    if not _is_worker(request.config):
        pytest.fail(f"the {name} fixture is only available in tests marked @pytest.mark.mcjax", pytrace=False)


# -- the mark --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    processes: int
    devices_per_process: int
    mode: str
    timeout: float

    @property
    def hang_after(self) -> float:
        """The guard's hang threshold: half the budget, so its report (and stacks) fit in it."""
        return max(3.0, self.timeout / 2)


def _project_defaults(config: pytest.Config) -> dict[str, Any]:
    """The mark's defaults from [tool.mcjax.pytest] in pyproject.toml (read once per session)."""
    cached = getattr(config, "_mcjax_project_defaults", None)
    if cached is None:
        from mcjax_lint.config import ConfigError

        from runtime_guard.settings import PYTEST_TABLE, project_settings

        try:
            cached = project_settings("pytest", PYTEST_TABLE, Path(config.rootpath))
        except ConfigError as e:
            raise pytest.UsageError(str(e)) from None
        config._mcjax_project_defaults = cached  # type: ignore[attr-defined]
    return cached


def spec_for(item: pytest.Item) -> Spec:
    """The mark's settings, with the command line's overrides; a clear error for bad values."""
    mark = item.get_closest_marker(MARK)
    assert mark is not None
    if mark.args:
        raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.mcjax takes keyword arguments only, "
                                f"e.g. @pytest.mark.mcjax(processes=2)")
    unknown = sorted(set(mark.kwargs) - set(MARK_DEFAULTS))
    if unknown:
        raise pytest.UsageError(f"{item.nodeid}: unknown @pytest.mark.mcjax argument(s) {', '.join(unknown)} "
                                f"(known: {', '.join(MARK_DEFAULTS)})")
    cfg = item.config
    kw = {**MARK_DEFAULTS, **_project_defaults(cfg), **mark.kwargs}
    if cfg.getoption("mcjax_processes") is not None:
        kw["processes"] = cfg.getoption("mcjax_processes")
    if cfg.getoption("mcjax_mode") is not None:
        kw["mode"] = cfg.getoption("mcjax_mode")
    if cfg.getoption("mcjax_timeout") is not None:
        kw["timeout"] = cfg.getoption("mcjax_timeout")
    try:
        spec = Spec(int(kw["processes"]), int(kw["devices_per_process"]), str(kw["mode"]), float(kw["timeout"]))
    except (TypeError, ValueError) as e:
        raise pytest.UsageError(f"{item.nodeid}: bad @pytest.mark.mcjax argument: {e}") from None
    if not 1 <= spec.processes <= 64:
        raise pytest.UsageError(f"{item.nodeid}: processes must be between 1 and 64, not {spec.processes}")
    if spec.devices_per_process < 1:
        raise pytest.UsageError(f"{item.nodeid}: devices_per_process must be at least 1")
    if spec.mode not in ("fast", "strict"):
        raise pytest.UsageError(f"{item.nodeid}: mode must be 'fast' or 'strict', not {spec.mode!r}")
    if spec.timeout <= 0:
        raise pytest.UsageError(f"{item.nodeid}: timeout must be a positive number of seconds")
    return spec


# -- parent: run the marked test as N processes ------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> bool | None:
    if _is_worker(item.config) or item.get_closest_marker(MARK) is None:
        return None
    ihook = item.ihook
    ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for rep in run_in_processes(item):
        ihook.pytest_runtest_logreport(report=rep)
    ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    # The test's fixtures never ran here, but the previous item may have left module or class
    # fixtures set up for this one: finish them as the normal protocol's teardown would.
    state = getattr(item.session, "_setupstate", None)
    if state is not None:
        if item.session.shouldfail or item.session.shouldstop:
            nextitem = None
        state.teardown_exact(nextitem)
    return True


def run_in_processes(item: pytest.Item) -> list[pytest.TestReport]:
    """Run `item` under the guard in N worker pytests; the parent's setup/call/teardown reports."""
    start = time.time()
    try:
        spec = spec_for(item)
        if not isinstance(item, pytest.Function):
            raise pytest.UsageError(f"{item.nodeid}: @pytest.mark.mcjax applies to test functions only")
    except pytest.UsageError as e:
        return [_report(item, "setup", "failed", str(e), start=start), _report(item, "teardown", "passed", start=start)]
    run = _Run(item, spec)
    try:
        run.execute()
    except (KeyboardInterrupt, pytest.exit.Exception):
        raise
    except BaseException as e:  # e.g. pytest-timeout's signal: still say what the processes did
        run.interrupted = f"{type(e).__name__}: {e}"
    reports = run.reports(start)
    if run.own_dir and not any(r.failed for r in reports):
        shutil.rmtree(run.dir, ignore_errors=True)  # no basetemp to keep it: nothing worth keeping
    return reports


class _Run:
    def __init__(self, item: pytest.Item, spec: Spec) -> None:
        self.item, self.spec, self.config = item, spec, item.config
        self.capture = self.config.getoption("capture", "fd") != "no"
        self.dir, self.own_dir = _run_dir(item)
        self.report_dir = _report_dir(item, self.dir)
        self.rc: int | None = None
        self.exit_codes: list[int | None] = [None] * spec.processes
        self.guard_report: Any = None
        self.report_paths: dict[str, Path] = {}
        self.supervisor_output = ""
        self.interrupted = ""

    def worker_argv(self) -> list[str]:
        cfg, item = self.config, self.item
        chain = item.listchain()
        module = next(i for i, n in enumerate(chain) if isinstance(n, pytest.File))
        names = [n.name for n in chain[module + 1:-1]] + [getattr(item, "originalname", item.name)]
        argv = ["-m", "pytest", "::".join([str(chain[module].path), *names]),
                "--mcjax-worker", str(self.dir), "--mcjax-worker-node", item.nodeid,
                "--rootdir", str(cfg.rootpath), "-o", "addopts=", "-p", "no:cacheprovider",
                "-qq", "--no-header", "--no-summary", "--color=no"]
        if cfg.inipath is not None:
            argv += ["-c", str(cfg.inipath)]
        # What the outer run was given that changes how this test is collected and reported.
        opt = cfg.option
        plugins = list(getattr(opt, "plugins", None) or [])
        if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") and __name__ not in plugins:
            plugins.append(__name__)
        for p in plugins:
            argv += ["-p", p]
        for o in getattr(opt, "override_ini", None) or []:
            if not o.startswith("addopts="):
                argv += ["-o", o]
        for w in getattr(opt, "pythonwarnings", None) or []:
            argv += ["-W", w]
        if getattr(opt, "importmode", None):
            argv += [f"--import-mode={opt.importmode}"]
        if getattr(opt, "noconftest", False):
            argv += ["--noconftest"]
        if getattr(opt, "confcutdir", None):
            argv += ["--confcutdir", str(opt.confcutdir)]
        tb = getattr(opt, "tbstyle", "auto")
        argv += [f"--tb={'auto' if tb in (None, 'no', 'line') else tb}"]
        if getattr(opt, "showlocals", False):
            argv += ["-l"]
        if getattr(opt, "runxfail", False):
            argv += ["--runxfail"]
        if not self.capture:
            argv += ["-s"]
        return argv

    def execute(self) -> None:
        from runtime_guard.launcher import Command, Options, Supervisor
        from runtime_guard.settings import EXIT_DETECTED, GuardSettings

        spec = self.spec
        settings = GuardSettings(mode=spec.mode, report_dir=str(self.report_dir), timeout=spec.hang_after)
        options = Options(processes=spec.processes, devices_per_process=spec.devices_per_process,
                          collective_timeout=max(10.0, spec.timeout), snapshot_interval=1.0,
                          output_dir=str(self.dir) if self.capture else None, deadline=spec.timeout,
                          extra_env={"PYTEST_ADDOPTS": ""})
        sup = Supervisor(Command(sys.executable, [], self.worker_argv()), settings, options)
        out = io.StringIO()
        redirect = contextlib.redirect_stderr(out) if self.capture else contextlib.nullcontext()
        try:
            with redirect:
                self.rc = sup.run()
        finally:
            self.supervisor_output = out.getvalue()
            self.exit_codes = [c.proc.returncode for c in sup.children] + [None] * (spec.processes - len(sup.children))
            if sup.report is not None and self.rc == EXIT_DETECTED:
                self.guard_report, self.report_paths = sup.report, dict(sup.report_paths)
        if self.rc == 130:
            raise KeyboardInterrupt

    # -- results ---------------------------------------------------------------------------------

    def results(self) -> list[dict[str, pytest.TestReport]]:
        out = []
        for i in range(self.spec.processes):
            phases: dict[str, pytest.TestReport] = {}
            for data in _read_jsonl(self.dir / f"process-{i}.jsonl"):
                if "error" in data:
                    phases["error"] = data["error"]
                    continue
                rep = self.config.hook.pytest_report_from_serializable(config=self.config, data=data["report"])
                if rep is not None:
                    phases[rep.when] = rep
            out.append(phases)
        return out

    def log(self, i: int) -> str:
        try:
            text = (self.dir / f"process-{i}.log").read_text(errors="replace")
        except OSError:
            return ""
        # The worker pytest's own progress line says nothing the reports do not.
        lines = [line for line in text.splitlines() if not _PROGRESS.match(line)]
        if len(lines) > _LOG_TAIL:
            lines = [f"... ({len(lines) - _LOG_TAIL} earlier lines in {self.dir / f'process-{i}.log'})",
                     *lines[-_LOG_TAIL:]]
        return "\n".join(lines)

    def reports(self, start: float) -> list[pytest.TestReport]:
        item = self.item
        results = self.results()
        problem = self.guard_report is not None or bool(self.interrupted)
        sections = self._sections(results)
        props = self._user_properties(results)
        mk = lambda when, outcome, longrepr=None, **kw: _report(item, when, outcome, longrepr, start=start,
                                                                 sections=sections, properties=props, **kw)
        setups = [r.get("setup") for r in results]
        if not problem and all(s is not None and s.skipped for s in setups):
            first = setups[0]
            return [mk("setup", "skipped", first.longrepr, **_xfail(first)), mk("teardown", "passed")]
        if not problem and any(s is not None and s.failed for s in setups) and self._finished(results):
            return [mk("setup", "failed", self._failure(results, "setup")), mk("teardown", "passed")]
        reps = [mk("setup", "passed")]
        calls = [r.get("call") for r in results]
        clean = not problem and self._finished(results) and self.rc == 0
        if clean and all(c is not None and c.passed for c in calls):
            reps.append(mk("call", "passed", duration=time.time() - start))
        elif clean and all(c is not None and c.skipped for c in calls):
            reps.append(mk("call", "skipped", calls[0].longrepr, **_xfail(calls[0])))
        else:
            reps.append(mk("call", "failed", self._failure(results, "call"), duration=time.time() - start))
        teardowns = [r.get("teardown") for r in results]
        if any(t is not None and t.failed for t in teardowns):
            reps.append(mk("teardown", "failed", self._failure(results, "teardown", teardown_only=True)))
        else:
            reps.append(mk("teardown", "passed"))
        return reps

    def _user_properties(self, results: list[dict[str, pytest.TestReport]]) -> list[tuple[str, object]]:
        """`record_property` calls of every process, named by process."""
        out = list(self.item.user_properties)
        for i, r in enumerate(results):
            last = next((r[w] for w in ("teardown", "call", "setup") if w in r), None)
            for name, value in (getattr(last, "user_properties", None) or []):
                out.append((f"{name} (process {i})", value))
        return out

    def _finished(self, results: list[dict[str, pytest.TestReport]]) -> bool:
        return all("teardown" in r for r in results)

    def _sections(self, results: list[dict[str, pytest.TestReport]]) -> list[tuple[str, str]]:
        out = []
        for i, r in enumerate(results):
            # A phase's report carries the sections of the phases before it: take the last one.
            last = next((r[w] for w in ("teardown", "call", "setup") if w in r), None)
            for title, content in (last.sections if last is not None else []):
                out.append((f"{title} (process {i})", content))
            log = self.log(i)
            if log.strip():
                out.append((f"mcjax process {i} output", log))
        if self.supervisor_output.strip() and self.guard_report is None:  # else: the report, shown above
            out.append(("mcjax supervisor", self.supervisor_output))
        return out

    def _failure(self, results: list[dict[str, pytest.TestReport]], when: str,
                 teardown_only: bool = False) -> "MultiProcessFailure":
        spec = self.spec
        f = MultiProcessFailure(processes=spec.processes, mode=spec.mode)
        if not teardown_only:
            if self.interrupted:
                f.headline = f"interrupted: {self.interrupted}"
                if "pytest-timeout" in self.interrupted:
                    f.headline += (f" (before the mark's own timeout of {spec.timeout:g} s, which would have "
                                   f"reported where each process was: keep it below pytest-timeout's)")
            if self.guard_report is not None:
                rep = self.guard_report
                f.headline = f"{rep.kind.upper()}: {rep.summary}"
                # Strict mode stops a divergence before the collective: stacks taken after that
                # show pytest handling DivergenceError, not the bug (they stay in the saved report).
                f.guard_text = _guard_text(rep, stacks=not (rep.kind == "divergence" and spec.mode == "strict"))
                where = self.report_paths.get("txt") or self.report_paths.get("json")
                f.report_path = str(where) if where else str(self.report_dir)
                f.crash = _guard_crash(rep)
        own_crash = False
        for i, r in enumerate(results):
            failed = [(w, r[w]) for w in ("setup", "call", "teardown") if w in r and r[w].failed
                      and (not teardown_only or w == "teardown")]
            for w, rep in failed:
                divergence = "DivergenceError" in _crash_message(rep).split(":", 1)[0]
                f.failures.append((i, w, rep, divergence and self.guard_report is not None))
                if not divergence and not own_crash:
                    # A process's own exception says more than the guard's "it left early".
                    f.crash, own_crash = _report_crash(rep, i) or f.crash, True
            if teardown_only:
                continue
            if "error" in r:
                f.missing.append((i, str(r["error"])))
            elif not failed and "teardown" not in r:
                code = self.exit_codes[i]
                last = max((w for w in ("setup", "call") if w in r), key=("setup", "call").index, default=None)
                state = f"last finished phase: {last}" if last else "the test never started"
                f.missing.append((i, f"no result ({state}; {_exit_text(code, self.guard_report is not None)})"))
            elif not failed and self.exit_codes[i] not in (0, None) and self.guard_report is None:
                f.missing.append((i, f"the test passed but the process then exited with status {self.exit_codes[i]}"))
        if not f.headline:
            failing = sorted({i for i, *_ in f.failures})
            if failing:
                f.headline = f"{when} failed on process{'es' if len(failing) > 1 else ''} {_plist(failing)}"
            elif f.missing:
                f.headline = f"process{'es' if len(f.missing) > 1 else ''} {_plist([i for i, _ in f.missing])} did not finish"
            elif len({_outcome(r) for r in results}) > 1:  # e.g. pytest.skip() on some processes only
                f.headline = "the processes disagree: " + "; ".join(
                    f"process {i} {_outcome(r)}" for i, r in enumerate(results))
            else:
                f.headline = f"the processes exited with status {self.rc}"
        if f.crash is None:
            f.crash = (str(self.item.path), (self.item.location[1] or 0) + 1, f.headline)
        return f


def _run_dir(item: pytest.Item) -> tuple[Path, bool]:
    """A fresh directory for this run's results, logs and the workers' basetemps."""
    name = "mcjax-" + _safe(item.name)[:40]
    factory = getattr(item.config, "_tmp_path_factory", None)
    if factory is not None:
        try:
            return factory.mktemp(name, numbered=True), False
        except Exception:
            pass
    return Path(tempfile.mkdtemp(prefix=name + "-")), True


def _report_dir(item: pytest.Item, run_dir: Path) -> Path:
    base = item.config.getoption("mcjax_report_dir")
    if not base:
        return run_dir / "report"
    return Path(base).resolve() / _safe(item.nodeid)


def _safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_") or "test"


def _read_jsonl(path: Path) -> Iterator[dict]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return
    for line in lines:
        try:
            data = json.loads(line)
        except ValueError:
            continue  # a process killed mid-write
        if isinstance(data, dict):
            yield data


def _report(item: pytest.Item, when: str, outcome: str, longrepr: Any = None, *, start: float,
            sections: list[tuple[str, str]] = (), duration: float = 0.0,
            properties: list[tuple[str, object]] | None = None, **extra: Any) -> pytest.TestReport:
    if isinstance(longrepr, list):  # a skip's (path, line, reason), a list once through JSON
        longrepr = tuple(longrepr)
    return pytest.TestReport(item.nodeid, item.location, {k: 1 for k in item.keywords}, outcome, longrepr, when,
                             sections=list(sections) if when == "call" or outcome != "passed" else [],
                             duration=duration, start=start, stop=time.time(),
                             user_properties=list(item.user_properties if properties is None else properties),
                             **extra)


def _outcome(phases: dict[str, Any]) -> str:
    rep = phases.get("call") or phases.get("setup")
    if rep is None:
        return "did not run"
    if rep.skipped:
        reason = rep.longrepr[2] if isinstance(rep.longrepr, (tuple, list)) and len(rep.longrepr) == 3 else ""
        return "skipped" + (f" ({reason})" if reason else "")
    return rep.outcome


def _xfail(rep: pytest.TestReport) -> dict[str, Any]:
    return {"wasxfail": rep.wasxfail} if hasattr(rep, "wasxfail") else {}


def _crash_message(rep: pytest.TestReport) -> str:
    try:
        return str(rep.longrepr.reprcrash.message)
    except AttributeError:
        return str(rep.longrepr or "")


def _report_crash(rep: pytest.TestReport, i: int) -> tuple[str, int, str] | None:
    crash = getattr(rep.longrepr, "reprcrash", None)
    if crash is None:
        return None
    return str(crash.path), int(crash.lineno), f"process {i}: {crash.message}"


def _guard_crash(rep: Any) -> tuple[str, int, str] | None:
    loc = next((p.location for p in sorted(rep.processes, key=lambda p: p.process_index) if p.location), None)
    head = f"mcjax {rep.kind.upper()}: {rep.summary}"
    return (loc.file, loc.line, head) if loc is not None else None


def _guard_text(rep: Any, stacks: bool = True) -> str:
    """The guard's report as text, without the per-process stacks (they are in the saved report);
    `stacks=False` also leaves out the merged stack tree."""
    from runtime_guard.report.render_text import render_text

    short = copy.deepcopy(rep)
    for p in short.processes:
        p.snapshots = []
    if not stacks:
        short.merged_stacks = None
    try:
        return render_text(short).rstrip("\n")
    except Exception as e:  # the verdict must reach the user even if a renderer breaks
        return f"{rep.kind}: {rep.summary} (could not render the report: {e!r})"


def _exit_text(code: int | None, stopped: bool) -> str:
    if code is None:
        return "not started"
    if code < 0:
        return "stopped by the guard after its report" if stopped else f"killed by signal {-code}"
    return f"exit status {code}"


def _plist(ps: list[int]) -> str:
    return ", ".join(map(str, sorted(ps)))


class MultiProcessFailure:
    """The failure of a multi-process test, as pytest prints it (`toterminal`) and summarizes it
    (`reprcrash`, for `-ra` lines). Under xdist it travels as its text."""

    def __init__(self, processes: int, mode: str) -> None:
        self.processes, self.mode = processes, mode
        self.headline = ""
        self.guard_text = ""
        self.report_path = ""
        self.crash: tuple[str, int, str] | None = None
        self.failures: list[tuple[int, str, pytest.TestReport, bool]] = []
        self.missing: list[tuple[int, str]] = []

    @property
    def reprcrash(self) -> Any:
        from _pytest._code.code import ReprFileLocation

        path, line, msg = self.crash or ("", 0, self.headline)
        return ReprFileLocation(path, line, msg)

    def toterminal(self, tw: Any) -> None:
        # The first line is the summary (under xdist the failure travels as text, and pytest's
        # short summary shows its first line).
        message = self.reprcrash.message
        first = message.splitlines()[0] if message else self.headline
        tw.line(first, red=True, bold=True)
        how = f"ran in {self.processes} processes, {self.mode} mode"
        if self.guard_text:
            tw.line(f"({how}; the guard stopped it)")
        else:
            tw.line(f"({how})" if first == self.headline else f"({how}: {self.headline})")
        if self.guard_text:
            lines = self.guard_text.splitlines()
            if message.startswith("mcjax "):  # the guard's summary, already said
                lines = lines[1:]
            for line in lines:
                tw.line(line)
            # Which stacks it holds is said once, in the report text above ("stacks of ...").
            tw.line(f"full report: {self.report_path}", bold=True)
        for i, when, rep, divergence in self.failures:
            if divergence:
                tw.line("")
                tw.line(f"process {i}: the guard's strict check raised DivergenceError in {when} (report above)",
                        red=True)
                continue
            tw.sep("_", f"process {i}: {when} failed")
            longrepr = rep.longrepr
            if hasattr(longrepr, "toterminal"):
                longrepr.toterminal(tw)
            else:
                for line in str(longrepr).splitlines():
                    tw.line(line)
        for i, why in self.missing:
            tw.line(f"process {i}: {why}", red=True)

    def __str__(self) -> str:
        from _pytest._io import TerminalWriter

        buf = io.StringIO()
        tw = TerminalWriter(file=buf)
        tw.hasmarkup = False
        self.toterminal(tw)
        return buf.getvalue().rstrip("\n")


# -- worker: one process of a multi-process test ------------------------------------------------------


class _Worker:
    """The hooks of a worker pytest (`--mcjax-worker RUNDIR`): run one node id as process i."""

    def __init__(self, config: pytest.Config) -> None:
        self.index = int(os.environ.get("MCJAX_PROCESS_ID", "0"))
        self.node = config.getoption("mcjax_worker_node")
        rundir = Path(config.getoption("mcjax_worker"))
        self.results = rundir / f"process-{self.index}.jsonl"
        self.config = config
        # Each process gets its own basetemp (tmp_path), inside the parent's run directory.
        config.option.basetemp = str(rundir / f"tmp-p{self.index}")

    def write(self, data: dict[str, Any]) -> None:
        with open(self.results, "a", encoding="utf-8") as f:
            f.write(json.dumps(data, default=str) + "\n")

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:  # the parent collected it, so this is worth showing as is
            self.write({"error": f"collecting {report.nodeid or 'the session'} failed:\n{report.longreprtext}"})

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        keep = [i for i in items if i.nodeid == self.node]
        drop = [i for i in items if i.nodeid != self.node]
        if drop:
            self.config.hook.pytest_deselected(items=drop)
        items[:] = keep

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not session.items:
            self.write({"error": f"the worker pytest did not collect {self.node}"})

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        # Before any fixture, so fixtures may use the global devices.
        import jax

        jax.distributed.initialize()

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
        rep = yield
        # Written at once (not at logreport): the supervisor may stop this process any moment now.
        data = self.config.hook.pytest_report_to_serializable(config=self.config, report=rep)
        self.write({"process": self.index, "report": data})
        if rep.failed and call.excinfo is not None:
            # Tell the other processes now (the guard names this line), not when pytest exits.
            try:
                from runtime_guard.guard import current

                g = current()
                if g is not None:
                    g.mark_exit(1, call.excinfo.value)
            except Exception:
                pass
        return rep


# -- lint: mcjax-lint on the test files and the package under test ------------------------------------


class LintFindings(list):
    """mcjax-lint's findings (dicts as `mcjax-lint --format json` gives them); empty when clean.
    Its repr is the findings as text, so `assert not mcjax_lint(...)` explains itself."""

    def __init__(self, findings: list[dict[str, Any]], errors: str = "") -> None:
        super().__init__(findings)
        self.errors = errors

    def text(self) -> str:
        lines = [f"{_show_path(f['path'])}:{f['line']}:{int(f.get('column', 0)) + 1}: {f['code']} [{f.get('severity', '')}] "
                 f"{f['message']}" for f in self]
        if self.errors:
            lines.append(self.errors.rstrip())
        return "\n".join(lines) or "no findings"

    def __repr__(self) -> str:
        return f"mcjax-lint: {len(self)} finding(s)\n{self.text()}"


def _show_path(path: str) -> str:
    try:
        return Path(path).relative_to(Path.cwd()).as_posix()
    except ValueError:
        return path


def run_mcjax_lint(paths: list[str | os.PathLike[str]]) -> LintFindings:
    """mcjax-lint (its command line, in this process) on `paths`; paths in the findings are absolute.
    A file the linter cannot analyse, or a configuration error, is an error, never a silent pass."""
    from mcjax_lint.cli import main as lint_main

    if not paths:
        return LintFindings([])
    with tempfile.TemporaryDirectory(prefix="mcjax-lint-") as d:
        out = Path(d) / "findings.json"
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            code = lint_main([*(str(p) for p in paths), "--format", "json", "-o", str(out), "--exit-zero",
                              "--no-cache", "-j", "1"])
        try:
            findings = json.loads(out.read_text()) if out.exists() else []
        except ValueError:
            findings = []
    cwd = Path.cwd()
    for f in findings:
        f["path"] = str((cwd / f["path"]).resolve())
    errors = err.getvalue() if code != 0 else ""
    if code != 0 and not errors:
        errors = f"mcjax-lint exited with status {code}"
    return LintFindings(findings, errors)


@pytest.fixture
def mcjax_lint(request: pytest.FixtureRequest) -> Any:
    """`mcjax_lint(*paths)` runs mcjax-lint and returns its findings (`LintFindings`, empty when
    clean); with no paths it lints this test's file. `assert not mcjax_lint("mypkg/")`."""

    def lint(*paths: str | os.PathLike[str]) -> LintFindings:
        return run_mcjax_lint(list(paths) or [request.path])

    return lint


def lint_targets(config: pytest.Config, test_files: list[Path]) -> list[Path]:
    """What --mcjax-lint checks besides the test files: `mcjax_lint_paths` from the ini file, else the
    packages (directories with __init__.py) at the root or under src/, tests excluded."""
    configured = config.getini("mcjax_lint_paths")
    if configured:
        return [Path(p) for p in configured]
    root = config.rootpath
    out = []
    for base in (root, root / "src"):
        if not base.is_dir():
            continue
        for d in sorted(base.iterdir()):
            if (d.is_dir() and (d / "__init__.py").is_file() and not d.name.startswith((".", "test"))
                    and not any(d in f.parents for f in test_files)):
                out.append(d)
    return out


class McjaxLintItem(pytest.Item):
    """One file or package linted by mcjax-lint (--mcjax-lint); fails with the findings in it."""

    def __init__(self, *, target: Path, **kw: Any) -> None:
        super().__init__(**kw)
        self.target = target
        self.add_marker("mcjax_lint")

    def runtest(self) -> None:
        findings = _session_lint(self.config)
        mine = LintFindings([f for f in findings if Path(f["path"]) == self.target
                             or self.target in Path(f["path"]).parents], findings.errors)
        if mine or mine.errors:
            raise McjaxLintFailed(mine)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if excinfo.errisinstance(McjaxLintFailed):
            return excinfo.value.findings.text()
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.target, 0, f"mcjax-lint {self.name}"


class McjaxLintFailed(Exception):
    def __init__(self, findings: LintFindings) -> None:
        super().__init__(findings.text())
        self.findings = findings


def _session_lint(config: pytest.Config) -> LintFindings:
    """One mcjax-lint run over every target (cross-module facts need them together), shared."""
    cached = getattr(config, "_mcjax_lint_findings", None)
    if cached is None:
        cached = run_mcjax_lint(config._mcjax_lint_targets)  # type: ignore[attr-defined]
        config._mcjax_lint_findings = cached  # type: ignore[attr-defined]
    return cached


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    if _is_worker(config) or not config.getoption("mcjax_lint"):
        return
    test_files = sorted({Path(i.path) for i in items if isinstance(i, pytest.Function) and Path(i.path).suffix == ".py"})
    targets = [*test_files, *lint_targets(config, test_files)]
    config._mcjax_lint_targets = targets  # type: ignore[attr-defined]
    for t in targets:
        try:
            rel = t.resolve().relative_to(config.rootpath).as_posix()
        except ValueError:
            rel = str(t)
        items.append(McjaxLintItem.from_parent(session, name=f"{rel}::mcjax-lint", nodeid=f"{rel}::mcjax-lint",
                                               path=t, target=t.resolve()))
