"""The parallel, cached pipeline around the engine; gives the same findings as
`engine.analyze_project`, whatever the cache holds and however many processes run.

Work per run, cheapest first:

1. Discover every Python file of the project (cross-module facts need all of them) and the
   target files (the ones findings are reported for: the paths given, e.g. by pre-commit).
2. For each project file: trust the cached digest when the stat signature is unchanged (and not
   racy), else read and hash it. Files whose digest has no cached summary are summarised
   (stdlib `ast`, `engine.summarize`) — in worker processes when there are many.
3. The project fingerprint is a hash over every file's (path, module, position-free summary
   digest) and the settings; findings are keyed by it with the summaries' positions too (they
   quote lines). A target whose cached findings were computed under the same key is done, and
   one the prefilter skipped under the same fingerprint and position-free summary is too. Only
   otherwise is the index needed: the cached one, brought up to date when the files changed since
   it was built only moved lines (the lines it quotes are moved) or changed functions nothing
   outside their file can read (those are re-solved with every other fact fixed), else rebuilt
   (`engine.build_index`, once) from the summaries; see `_relocated`.
4. Targets still without findings go through `needs_full_analysis` (here: it reads much of the
   index) and, if selected, `engine.analyze` (libcst) — in worker processes when there are many.
   When the index is built in this run, those workers are forked before its fixpoint and parse
   the files likely selected while this process solves it (`_Ahead`).
5. Selection, per-file ignores, severity overrides and suppressions apply to the raw findings
   (cheap, never cached, so changing `ignore` needs no re-analysis).

Workers are forked (Linux) after the state they need exists, so nothing big is pickled: a
worker gets (path, module) and returns small JSON-ready data (the workers forked before the
index's fixpoint get its solved facts, a few MB, once).
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
import pickle
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcjax_lint import libraries
from mcjax_lint import suppressions as sup
from mcjax_lint.cache import (
    Cache,
    FileRecord,
    cache_available,
    now_ns,
    single_threaded,
    stat_signature,
)
from mcjax_lint.analysis.relocate import position_free
from mcjax_lint.config import LintConfig, RuleFilter
from mcjax_lint.errors import AnalysisError
from mcjax_lint.files import display_path
from mcjax_lint.model import CERTAIN, Edit, FileError, Finding, Fix, Severity, Step
from mcjax_lint.modnames import module_names
from mcjax_lint.settings import AnalysisSettings


class _LazyEngine:
    """`mcjax_lint.engine`, imported on first use: a warm run served from the cache never needs
    it (its import is most of the start-up time left)."""

    def __getattr__(self, name: str) -> Any:
        import mcjax_lint.engine as real

        return getattr(real, name)


engine = _LazyEngine()

# Below this much work (bytes of source) worker processes cost more than they save.
_PARALLEL_MIN_BYTES = 300_000


@dataclass
class SourceFile:
    path: Path  # absolute
    rel: str  # the path the engine sees: project-relative posix (stable across working directories)
    display: str  # the path shown to the user
    module: str
    target: bool  # findings are reported for it


@dataclass
class RunStats:
    files: int = 0  # project files considered
    targets: int = 0
    read: int = 0  # files read and hashed this run
    summarized: int = 0  # files summarised this run
    analyzed: int = 0  # files analysed with libcst this run
    findings_cached: int = 0  # targets whose findings came from the cache
    prefiltered: int = 0  # targets skipped by needs_full_analysis
    index_built: bool = False
    jobs: int = 1
    timings: dict[str, float] = field(default_factory=dict)  # seconds per phase
    slowest: list[tuple[float, str]] = field(default_factory=list)  # (seconds, file) per analysed file
    skipped: set[str] = field(default_factory=set)  # prefiltered in this run
    notes: list[str] = field(default_factory=list)  # warnings about the analysis itself (stderr)
    info: list[str] = field(default_factory=list)  # what the analysis' bounds left out (--timings)
    library_modules: int = 0  # installed library modules whose summaries the index used
    library_modules_read: int = 0  # of those, read from source in this run (not cached)
    relocated: int = 0  # files whose moved lines the cached index was moved to (no rebuild)
    resolved: int = 0  # changed files whose functions were re-solved on the cached index
    relocation_refused: str = ""  # why the cached index could not be moved (then rebuilt)

    def prefiltered_now(self, rel: str) -> bool:
        return rel in self.skipped

    def phase(self, name: str, since: float) -> float:
        now = time.perf_counter()
        self.timings[name] = self.timings.get(name, 0.0) + now - since
        return now


@dataclass
class LintResult:
    findings: list[Finding]  # final: selected, not suppressed, sorted; display paths
    file_errors: list[FileError]
    raw: dict[str, list[Finding]] = field(default_factory=dict)  # engine findings per engine path
    files: dict[str, SourceFile] = field(default_factory=dict)  # by display path
    stats: RunStats = field(default_factory=RunStats)
    index: Any = None  # the project index when this run needed one (built, loaded or moved)


def unsettled_note(index: Any) -> str | None:
    """A warning when the call-graph fixpoint stopped before every function's facts settled:
    collective work reached only through those functions may then be missing from the findings
    (never dropped without saying so)."""
    left = getattr(index, "unsettled", None)
    if not left:
        return None
    from mcjax_lint.analysis.index import MAX_ITERATIONS

    names = ", ".join(f"`{q}`" for q in left[:3]) + (f" and {len(left) - 3} more" if len(left) > 3 else "")
    return (f"the facts of {len(left)} function{'s' if len(left) != 1 else ''} ({names}) did not settle within "
            f"{MAX_ITERATIONS} rounds of the call graph: collective work reached through them was not followed "
            f"to the end and may be missing from the findings")


# --- (de)serialisation of findings -----------------------------------------------------------


def finding_from_dict(d: dict) -> Finding:
    fix = d.get("fix")
    return Finding(
        path=d["path"],
        line=d["line"],
        column=d["column"],
        end_line=d["end_line"],
        end_column=d["end_column"],
        code=d["code"],
        severity=Severity(d["severity"]),
        message=d["message"],
        fix=None if fix is None else Fix(fix["description"], tuple(Edit(**e) for e in fix["edits"])),
        related=tuple((r["message"], r["line"], r["column"]) for r in d.get("related", ())),
        chain=_steps(d.get("chain", ())),
        also=tuple(_steps(c) for c in d.get("also", ())),
    )


def _steps(chain) -> tuple[Step, ...]:
    return tuple(Step(c["line"] or 0, c["text"], c["certain"], c["why"] or "") for c in chain)


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _json_digest(obj: Any) -> str:
    return _digest(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode())


# --- reading ---------------------------------------------------------------------------------


class ReadError(Exception):
    """Why a file's bytes are not analysable source; `cacheable` when it depends only on them."""

    def __init__(self, message: str, cacheable: bool) -> None:
        super().__init__(message)
        self.cacheable = cacheable


def decode_source(data: bytes) -> str:
    if b"\0" in data:
        raise ReadError("binary file (contains NUL bytes), not Python source", True)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ReadError(f"not valid UTF-8 (invalid byte at offset {e.start}); mcjax-lint reads UTF-8 source only", True) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_bytes(path: Path, max_size: int) -> tuple[bytes, os.stat_result]:
    try:
        st = os.stat(path)
        if st.st_size > max_size:
            raise ReadError(f"file too large ({st.st_size} bytes > max-file-size {max_size}); not analysed", False)
        with open(path, "rb") as f:
            data = f.read(max_size + 1)
    except OSError as e:
        raise ReadError(f"cannot read file: {e.strerror or e}", False) from None
    if len(data) > max_size:
        raise ReadError(f"file too large (> max-file-size {max_size} bytes); not analysed", False)
    return data, st


def describe_error(e: AnalysisError) -> str:
    """The error without the path (the output prefixes it): `line:col: message`."""
    if e.line is not None:
        col = f":{e.column + 1}" if e.column is not None else ""
        return f"cannot analyse: {e.message} (line {e.line}{col})"
    return f"cannot analyse: {e.message}"


# --- worker tasks (module-level so forked workers find them; state in globals) ----------------

_W_SETTINGS: AnalysisSettings = AnalysisSettings()
_W_INDEX: Any = None
_W_MAX_SIZE: int = 0
_W_SUMMARY_DIR: Path | None = None  # where workers store the summaries they compute (the cache)
_W_SEND_BLOB = False  # summaries go back to the parent as their pickled blob (from a pool)


def _summarize_task(task: tuple[str, str, str, str | None, str | None]) -> tuple[str, Any, dict | None]:
    """(abs path, rel, module, previous summary digest, previous shape) -> (rel, FileRecord json
    or ("error", message, cacheable, ...), summary)."""
    abs_path, rel, module, old_digest, old_shape = task
    checked = now_ns()
    try:
        data, st = read_bytes(Path(abs_path), _W_MAX_SIZE)
    except ReadError as e:
        return rel, ("error", str(e), False, None, None, None), None
    digest = _digest(data)
    sig = stat_signature(st)
    try:
        text = decode_source(data)
    except ReadError as e:
        return rel, ("error", str(e), True, digest, sig, checked), None
    try:
        summary = engine.summarize(text, rel, module).to_dict()
        error = None
        # Serialised once, here in the worker, for the digest and the cache file. Pickle keeps the
        # summary's shared sub-objects shared (the index's memos depend on it; JSON would not).
        blob = pickle.dumps(summary, protocol=pickle.HIGHEST_PROTOCOL)
        sdig = _digest(blob)
        shape = _shape(summary, sdig, old_digest, old_shape)
        if _W_SUMMARY_DIR is not None:
            store_summary(_W_SUMMARY_DIR, sdig, blob)
    except AnalysisError as e:
        summary, sdig, shape, error = None, None, None, describe_error(e)
    supp = [s.to_list() for s in sup.scan(text)]
    rec = FileRecord(sig, checked, digest, module, sdig, error, supp, shape)
    if _W_SEND_BLOB and summary is not None:
        return rel, rec.to_json(), blob  # already pickled: the pool need not pickle it again
    return rel, rec.to_json(), summary


def _shape(summary: dict, digest: str, old_digest: str | None, old_shape: str | None) -> str:
    """The summary's shape digest (see FileRecord.shape_digest): the previous one when the
    previous summary differs from this one only in positions, else this summary's own digest.
    Sound either way (one shape never names two position-free forms); only the first keeps the
    project fingerprint, and with it the cached index and prefilter answers, across line moves."""
    if old_shape is None or old_digest is None or _W_SUMMARY_DIR is None:
        return digest
    if old_digest == digest:
        return old_shape
    from mcjax_lint.cache import read_summary

    old = read_summary(_W_SUMMARY_DIR, old_digest)
    if old is not None and position_free(old)[0] == position_free(summary)[0]:
        return old_shape
    return digest


def store_summary(directory: Path, digest: str, blob: bytes) -> None:
    from mcjax_lint.cache import sign, write_bytes

    target = directory / f"{digest}.pickle"
    if not target.exists():
        try:
            write_bytes(target, sign(blob))
        except OSError:  # an unwritable cache only costs time later
            pass


def _analyze_task(task: tuple[str, str, str, str], ahead: tuple | None = None
                  ) -> tuple[str, str | None, list[dict] | None, str | None, float]:
    """(abs path, rel, module, expected digest) -> (rel, digest, findings, error, seconds).
    `ahead`: what `_parse_ahead` read and parsed of this file, if it did."""
    abs_path, rel, module, expected = task
    t0 = time.perf_counter()
    parsed = None
    if ahead is not None:
        digest, text, parsed, took = ahead
        t0 -= took
    else:
        try:
            data, _ = read_bytes(Path(abs_path), _W_MAX_SIZE)
            digest = _digest(data)
            text = decode_source(data)
        except ReadError as e:
            return rel, None, None, str(e), time.perf_counter() - t0
    if digest != expected:  # changed since it was summarised: analyse it, but never cache that
        digest = None
    # No collection while one file is analysed: its libcst tree (millions of objects on a large
    # file) lives until the file is done, and each pass over the young objects would walk what of
    # it is new. Then reference counting frees the tree (`driver.analyze_source`); the collector,
    # on again, finds the file's few cycles on a later pass.
    enabled = gc.isenabled()
    gc.disable()
    try:
        findings = engine.analyze(text, rel, module, _W_INDEX, _W_SETTINGS, parsed=parsed)
    except AnalysisError as e:
        return rel, digest, [], describe_error(e), time.perf_counter() - t0
    finally:
        if enabled:
            gc.enable()
    return rel, digest, [f.to_dict() for f in findings], None, time.perf_counter() - t0


def _parse_ahead(task: tuple) -> tuple | None:
    """Read and parse (libcst) one file for `_analyze_task`, before the index exists, and find
    its nodes' positions (`Positions.ready`: nearly every file the prefilter keeps asks for some,
    ~a quarter of the cost of its parse): (digest, text, parse, seconds), or None where that fails
    (the analysis then reads it again and says why)."""
    t0 = time.perf_counter()
    try:
        data, _ = read_bytes(Path(task[0]), _W_MAX_SIZE)
        text = decode_source(data)
        parsed = engine.parse(text, task[1])
        parsed[1].ready()
    except Exception:
        return None
    return _digest(data), text, parsed, time.perf_counter() - t0


def _ahead_plans(index: Any, tasks: list, jobs: int) -> list[list[int]]:
    """Which files each worker parses ahead (`_Ahead`), as numbers of `tasks`, largest first:
    a guess, from the unsolved index, of those the prefilter will keep, shared out by size. A
    file is guessed kept where it calls `initialize()` or star-imports (always kept), or where
    one of its functions touches a process-dependent value, an order or a string hash (the
    summary's "p", "o", "h" flags) and one does collective work (a collective call, a jit), each
    itself or in a project function it calls by name, at any depth (no method resolved, no
    fact solved: ~0.1 s). Only which files are parsed ahead depends on it, never a finding.
    Deterministic: every worker computes the same plans. Run in the workers (it fills caches of
    the index that a solve reads; theirs are replaced by the solved ones)."""
    from mcjax_lint.analysis.summary import STAR

    callers: dict[str, list[str]] = {}
    for q, f in index.functions.items():
        for g in sorted(index._called_by_name(f)):
            callers.setdefault(g, []).append(q)

    def reaching(own: Callable[[Any], Any]) -> set[str]:
        out = {q for q, f in index.functions.items() if own(f)}
        todo = sorted(out)
        while todo:
            for q in callers.get(todo.pop(), ()):
                if q not in out:
                    out.add(q)
                    todo.append(q)
        return out

    divergent = reaching(lambda f: "p" in f.flags or "o" in f.flags or "h" in f.flags)
    work = reaching(lambda f: f.collective or f.jit or f.param_jits or f.glob_ops)

    def likely(s: Any) -> bool:
        if s.initialize_line or any(k.startswith(STAR) for k in s.imports):
            return True
        return any(q in divergent for q in s.functions) and any(q in work for q in s.functions)

    plans: list[list[int]] = [[] for _ in range(jobs)]
    load = [0] * jobs
    for i, t in enumerate(tasks):
        s = index.modules.get(t[2])
        if s is not None and s.path == t[1] and likely(s):
            k = load.index(min(load))
            plans[k].append(i)
            load[k] += _size(t[0])
    return plans


def _ahead_worker(conn, others: list, index: Any, tasks: list, jobs: int, w: int, claims) -> None:
    """A worker of the precise pass forked before the index's fixpoint (`_Ahead`): it parses
    the files of `plans[w]` (largest first) until the solved facts come, installs them in its
    copy of the unsolved index, then analyses the files the prefilter keeps (their numbers
    come one by one, then None): first those it parsed, then the rest of its plan, then those
    in no plan, and once the selection is complete the other workers' (smallest first), each
    claimed once among all the workers."""
    global _W_INDEX
    for c in others:  # (the other workers' pipes: only the parent holds them open)
        c.close()
    try:
        plans = _ahead_plans(index, tasks, jobs)
        parsed: dict[int, tuple] = {}
        for i in plans[w]:
            if conn.poll():
                break
            got = _parse_ahead(tasks[i])
            if got is not None:
                parsed[i] = got
        index.adopt_solved(pickle.loads(conn.recv_bytes()))
        _W_INDEX = index
        gc.freeze()  # (as `_collect_again` in the parent: what lives as long as the worker)
        gc.enable()
        plan = {i: k for k, pl in enumerate(plans) for i in pl}
        # The selected files so far, largest first: parsed here, in this worker's plan, in no
        # plan, in another's (taken from the smallest, once the selection is complete).
        queues: list[deque[int]] = [deque(), deque(), deque(), deque()]
        complete = False
        while True:
            while not complete and conn.poll():
                i = conn.recv()
                if i is None:
                    complete = True
                    queues[3].reverse()
                else:
                    queues[0 if i in parsed else 1 if plan.get(i) == w else 2 if i not in plan else 3].append(i)
            q = next((q for q in queues[:4 if complete else 3] if q), None)
            if q is None:
                if complete:
                    break
                conn.poll(None)  # (wait for the next selected file)
                continue
            i = q.popleft()
            with claims.get_lock():
                taken, claims[i] = claims[i], 1
            if taken:
                parsed.pop(i, None)
                continue
            conn.send(_analyze_task(tasks[i][:4], parsed.pop(i, None)))
        conn.send(None)
    except BaseException:
        import traceback

        try:
            conn.send(traceback.format_exc())
        except Exception:
            pass
    finally:
        conn.close()


class _Ahead:
    """The precise pass's workers, forked before the index's fixpoint rather than after it:
    while this process solves the index (one core) they parse (libcst), on the other cores,
    the files the prefilter will likely keep (`_ahead_plans`), ~40% of their analysis and
    none of it needing the index. Then they get the solved facts (`ProjectIndex.solved_state`,
    a few MB) and, one by one as this process's prefilter keeps them, the files to analyse.
    Their findings are the ones workers forked after the fixpoint give: the same summaries,
    the same facts, the same parse."""

    def __init__(self, tasks: list, jobs: int) -> None:
        self.tasks, self.jobs = tasks, jobs
        self.started = False
        self.procs: list = []
        self.conns: list = []
        self.live: list = []

    def start(self, index: Any) -> None:
        import multiprocessing

        _load_analysis()
        ctx = multiprocessing.get_context("fork")
        self.claims = ctx.Array("b", len(self.tasks))
        for k in range(self.jobs):
            mine, theirs = ctx.Pipe()
            p = ctx.Process(target=_ahead_worker, args=(theirs, list(self.conns), index, self.tasks, self.jobs, k,
                                                        self.claims), daemon=True)
            p.start()
            theirs.close()
            self.procs.append(p)
            self.conns.append(mine)
        self.live = list(self.conns)
        self.started = True

    def run(self, index: Any, selected: Iterable[tuple]) -> Iterator[tuple]:
        """Hand the workers the solved facts, then each file `selected` yields (a task, as this
        process's prefilter keeps it); the workers' results (`_analyze_task`'s)."""
        state = pickle.dumps(index.solved_state(), protocol=pickle.HIGHEST_PROTOCOL)
        for c in self.conns:
            c.send_bytes(state)
        at = {t[1]: i for i, t in enumerate(self.tasks)}
        early: list[tuple] = []
        for task in selected:
            for c in self.conns:
                c.send(at[task[1]])
            self._collect(early, 0)  # (read as they come: a worker blocked on a full pipe does nothing)
        for c in self.conns:
            c.send(None)
        return self._results(early)

    def _collect(self, into: list, timeout: float | None) -> None:
        from multiprocessing.connection import wait

        for c in wait(self.live, timeout):
            try:
                got = c.recv()
            except EOFError:
                raise RuntimeError("a worker of the precise pass ended without its results") from None
            if got is None:
                self.live.remove(c)
            elif isinstance(got, str):
                raise RuntimeError(f"a worker of the precise pass failed:\n{got}")
            else:
                into.append(got)

    def _results(self, early: list) -> Iterator[tuple]:
        done = False
        try:
            yield from early
            while self.live:
                got: list[tuple] = []
                self._collect(got, None)
                yield from got
            done = True
        finally:
            self.close(wait=done)

    def close(self, wait: bool = False) -> None:
        """End the workers: let them exit once they sent every result (`wait`), else stop them."""
        for c in self.conns:
            c.close()
        for p in self.procs:
            if wait:
                p.join(10)
            if p.is_alive():
                p.terminate()
            p.join()
        self.conns, self.procs = [], []


def _map(func, tasks: list, jobs: int, chunksize: int) -> Iterable:
    """Run tasks serially or in forked workers; results in any order.

    Workers are forked so that they inherit the state in the `_W_*` globals (the index above
    all) instead of receiving it pickled; where fork is not the safe default (macOS, Windows)
    the work runs serially, and also where this process has other threads (the linter used as a
    library beside JAX): a forked child has only the forking thread, so a lock another one held
    would never be released there."""
    if jobs <= 1 or len(tasks) <= 1 or not single_threaded():
        return map(func, tasks)
    import multiprocessing

    return _pool_results(multiprocessing.get_context("fork").Pool(jobs), func, tasks, chunksize)


def _prefilter_streamed(selected: Iterator[tuple], jobs: int) -> Iterable:
    """`_analyze_task` of each file `selected` yields, in forked workers started now: the pool's
    task thread draws on `selected` (the prefilter, in this process) while the workers analyse
    what it has kept so far. The prefilter, ~2 s of ~700 kLOC, no longer waits for a core."""
    import multiprocessing

    return _pool_results(multiprocessing.get_context("fork").Pool(jobs), _analyze_task, selected, 1)


def _pool_results(pool, func, tasks, chunksize):
    try:
        yield from pool.imap_unordered(func, tasks, chunksize=chunksize)
    finally:
        pool.terminate()
        pool.join()


# --- the pipeline ----------------------------------------------------------------------------


def code_fingerprint() -> str:
    """Identifies the analysis code itself, so editing a rule (without a version bump, as in
    development) never reuses findings computed by the old code."""
    base = Path(__file__).resolve().parent
    h = hashlib.blake2b(digest_size=8)
    for p in sorted(base.rglob("*.py")):
        try:
            st = p.stat()
        except OSError:
            continue
        h.update(f"{p.relative_to(base)}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()


def _engine_path(path: Path, root: Path | None, cwd: Path) -> str:
    if root is not None:
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
    return display_path(path, cwd)


def default_jobs() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def lint_files(
    targets: Sequence[Path],
    project_files: Sequence[Path],
    config: LintConfig,
    *,
    jobs: int | None = None,
    use_cache: bool = True,
    cwd: Path | None = None,
    need_index: bool = False,
    reference: bool = False,
) -> LintResult:
    """Lint `targets` with cross-module facts from `targets` ∪ `project_files`.

    For checks of the cache (benchmarks/lint_incremental_check.py): `need_index` gets the project
    index (in `LintResult.index`) even when no target needs it; `reference` computes it and every
    target's findings from scratch (summaries still come from the cache, which is left as it was
    apart from them)."""
    # Summaries and the index are millions of small long-lived objects and no cyclic garbage:
    # the collector only walks them over and over (with the default thresholds it took ~65% of
    # the index build; with raised ones still ~20%). It is off until the libcst pass, which
    # does leave cycles behind (see `_collect_again`), and collects rarely then.
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(100_000, 50, 1000)
    gc.disable()
    try:
        return _lint_files_retrying(targets, project_files, config, jobs, use_cache, cwd, (need_index, reference))
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()
        if enabled:
            gc.enable()


def _load_analysis() -> None:
    """Before forking the libcst pass's workers: its modules (libcst, the rule visitors) and the
    rule catalogue, loaded once here (~0.3 CPU s) rather than once in every worker. Only then: a
    run served from the cache never loads them."""
    from mcjax_lint import rules
    from mcjax_lint.analysis import driver  # noqa: F401

    rules.visitor_classes()
    rules.RULES  # noqa: B018 (built on first read)


def _collect_again() -> None:
    """Before the libcst pass: what exists now lives as long as the run, so it leaves the
    collector's reach (and forked workers do not copy every shared page when they collect);
    the collector comes back on for the cyclic garbage of the libcst trees."""
    gc.freeze()
    gc.enable()


def _lint_files_retrying(targets, project_files, config: LintConfig, jobs, use_cache, cwd, check) -> LintResult:
    for _ in range(3):
        try:
            return _lint_files(targets, project_files, config, jobs, use_cache, cwd, check)
        except _CacheMiss as e:  # a summary file vanished: forget the records that named it
            if config.project_root is not None:
                cache = Cache(config.project_root / config.cache_dir, code_fingerprint(), config.analysis_fingerprint())
                for rel in [r for r, rec in cache.files.items() if rec.summary_digest == e.args[0]]:
                    del cache.files[rel]
                    cache._files_dirty = True
                cache.save()
    return _lint_files(targets, project_files, config, jobs, False, cwd, check)


def _lint_files(targets, project_files, config: LintConfig, jobs, use_cache, cwd, check=(False, False)) -> LintResult:
    global _W_SETTINGS, _W_INDEX, _W_MAX_SIZE, _W_SUMMARY_DIR, _W_SEND_BLOB
    cwd = cwd or Path.cwd()
    root = config.project_root
    jobs = default_jobs() if jobs is None else max(1, jobs)
    stats = RunStats(jobs=jobs)
    t = time.perf_counter()
    settings = config.analysis
    _W_SETTINGS, _W_INDEX, _W_MAX_SIZE = settings, None, config.max_file_size

    target_set = set(targets)
    all_paths = sorted(target_set | set(project_files))
    modules = module_names([str(p) for p in all_paths])
    files: list[SourceFile] = []
    for p in all_paths:
        files.append(SourceFile(p, _engine_path(p, root, cwd), display_path(p, cwd), modules[str(p)], p in target_set))
    by_rel = {f.rel: f for f in files}
    stats.files, stats.targets = len(files), len(target_set)

    cache: Cache | None = None
    if use_cache and root is not None and cache_available():
        cache = Cache(root / config.cache_dir, code_fingerprint(), config.analysis_fingerprint())
    records: dict[str, FileRecord] = {}
    summaries: dict[str, dict] = {}  # summary digest -> summary, those at hand this run
    errors: dict[str, str] = {}  # rel -> message (targets only are reported)
    built: dict[str, Any] = {}  # rel -> its summary read for the index (`ModuleSummary`), as summarised

    t = stats.phase("setup", t)
    # 2. digests and summaries
    to_summarize: list[tuple[str, str, str, str | None, str | None]] = []
    todo_bytes = 0
    for f in files:
        rec = cache.files.get(f.rel) if cache else None
        if rec is not None and rec.module == f.module:
            try:
                st = os.stat(f.path)
            except OSError as e:
                errors[f.rel] = f"cannot read file: {e.strerror or e}"
                continue
            if st.st_size > config.max_file_size:
                errors[f.rel] = f"file too large ({st.st_size} bytes > max-file-size {config.max_file_size}); not analysed"
                continue
            if rec.stat_trusted(st):
                records[f.rel] = rec
                continue
            checked = now_ns()
            try:
                data, st = read_bytes(f.path, config.max_file_size)
            except ReadError as e:
                errors[f.rel] = str(e)
                continue
            stats.read += 1
            if _digest(data) == rec.digest:
                cache.touch_file(f.rel, stat_signature(st), checked)
                records[f.rel] = rec
                continue
            todo_bytes += len(data)
        else:
            try:
                todo_bytes += os.stat(f.path).st_size
            except OSError:
                pass
        prev = cache.files.get(f.rel) if cache else None
        to_summarize.append((str(f.path), f.rel, f.module, prev and prev.summary_digest, prev and prev.shape_digest))

    if to_summarize:
        _W_SUMMARY_DIR = cache.summaries_dir() if cache is not None else None
        to_summarize.sort(key=lambda t: -_size(t[0]))
        n = jobs if todo_bytes >= _PARALLEL_MIN_BYTES else 1
        _W_SEND_BLOB = n > 1
        for rel, out, summary in _map(_summarize_task, to_summarize, n, chunksize=4):
            if isinstance(summary, bytes):
                summary = pickle.loads(summary)
            stats.summarized += 1
            if isinstance(out, tuple):  # ("error", message, cacheable, digest, sig, checked)
                _, message, cacheable, digest, sig, checked = out
                errors[rel] = message
                if cacheable and cache is not None:
                    cache.put_file(rel, FileRecord(sig, checked, digest, by_rel[rel].module, None, message, []))
                continue
            rec = FileRecord.from_json(out)
            records[rel] = rec
            stats.read += 1
            if summary is not None:
                summaries[rec.summary_digest] = summary
                if n > 1:
                    # Read for the index here, beside the workers (this process mostly waits for
                    # them), not at the start of the index build, which has one core to itself.
                    try:
                        built[rel] = engine.ModuleSummary.from_dict(summary)
                    except Exception:  # (read again, and refused as a cache miss, when needed)
                        pass
            if cache is not None:
                cache.put_file(rel, rec)
        _W_SEND_BLOB = False
    for rel, rec in records.items():
        if rec.error is not None:
            errors[rel] = rec.error

    t = stats.phase("summaries", t)
    # 3. project fingerprints: every summary the index is built from, and the settings. The
    # index and the prefilter's answers depend on the summaries without their positions
    # (`project_fp`: an edit that only moves lines keeps it; the cached index is then moved to
    # the current lines); findings quote lines of other files, so they are keyed by the
    # summaries with their positions (`lines_fp`).
    summarized = sorted((rel, r) for rel, r in records.items() if r.summary_digest is not None)
    lib_fp = (libraries.environment_fingerprint(libraries.search_path(settings.library_paths))
              if settings.library_summaries else "")
    project_fp = _json_digest([repr(settings), lib_fp, [(rel, r.module, r.shape_digest) for rel, r in summarized]])
    lines_fp = _json_digest([project_fp, [(rel, r.summary_digest) for rel, r in summarized]])

    def summary_dict(digest: str) -> dict:
        d = summaries.get(digest)
        if d is None and cache is not None:
            d = cache.summary(digest)
        if d is None:
            raise _CacheMiss(digest)
        return d

    def summary_by_digest(digest: str):
        d = summary_dict(digest)
        try:
            return engine.ModuleSummary.from_dict(d)
        except Exception:  # a cached summary the engine no longer reads: recompute
            raise _CacheMiss(digest) from None

    def summary_of(rec: FileRecord):
        return summary_by_digest(rec.summary_digest)

    raw: dict[str, list[Finding]] = {}
    index = None

    def ensure_index(before_solve=None):
        """The index: cached (moved to the current lines), else built. `before_solve(index)` runs
        on a built index after its tables and before its fixpoint (the precise pass's workers
        are forked there: `_Ahead`)."""
        nonlocal index
        if index is None:
            t0 = time.perf_counter()
            loaded = cache.load_index(project_fp) if cache is not None and not reference else None
            if loaded is not None:
                index = _relocated(loaded, summarized, summary_dict, stats, lib_fp,
                                   tuple(libraries.search_path(settings.library_paths)))
            if index is None:
                project = [built.pop(rel) if rel in built else summary_of(r) for rel, r in summarized]
                built.clear()
                libs = []
                if settings.library_summaries:
                    t1 = time.perf_counter()
                    got = libraries.library_summaries(project, libraries.search_path(settings.library_paths),
                                                      cache.dir / "libraries" if cache is not None else None)
                    libs = got.summaries
                    stats.library_modules, stats.library_modules_read = len(libs), got.read
                    stats.phase("libraries", t1)
                index = engine.build_index(project, settings, libs, solve=before_solve is None)
                if before_solve is not None:
                    before_solve(index)
                    index.solve()
                index.library_env = lib_fp
                index.library_note = got.not_followed() if settings.library_summaries else None
                stats.index_built = True
                if cache is not None and not reference:
                    cache.save_index(project_fp, index, background=True,
                                     base={rel: r.summary_digest for rel, r in summarized})
            stats.phase("index", t0)
            note = unsettled_note(index)
            if note:
                stats.notes.append(note)
            note = getattr(index, "library_note", None)
            if note:
                # Library reading stops at its bounds on most projects (deep framework internals):
                # said with --timings, not on every run.
                stats.info.append(note)
        return index

    def key_for(f: SourceFile, rec: FileRecord) -> str:
        return _json_digest([lines_fp, f.rel, f.module, rec.digest])

    def prefilter_key(rec: FileRecord) -> str:
        # `needs_full_analysis` reads no position: the position-free summary decides.
        return _json_digest([project_fp, rec.shape_digest])

    need_index, reference = check
    if need_index:
        ensure_index()
    to_analyze: list[tuple[str, str, str, str, str]] = []
    pending_keys: dict[str, str] = {}
    for f in files:
        if not f.target or f.rel in errors or f.rel not in records:
            continue
        rec = records[f.rel]
        key = key_for(f, rec)
        hit = cache.findings.get(f.rel) if cache and not reference else None
        if hit is not None and hit.key == key:
            raw[f.rel] = [finding_from_dict(d) for d in hit.findings]
            stats.findings_cached += 1
            continue
        if hit is not None and hit.prefiltered == prefilter_key(rec):
            raw[f.rel] = []  # same summary, same project: the prefilter's answer is known
            stats.prefiltered += 1
            cache.put_findings(f.rel, key, [], hit.prefiltered)
            continue
        pending_keys[f.rel] = key
        to_analyze.append((str(f.path), f.rel, f.module, rec.digest, rec.summary_digest))

    if to_analyze:
        to_analyze.sort(key=lambda t: -_size(t[0]))
        big = jobs > 1 and sum(_size(t[0]) for t in to_analyze) >= _PARALLEL_MIN_BYTES and single_threaded()
        ahead = _Ahead(to_analyze, jobs) if big and index is None else None
        try:
            _W_INDEX = ensure_index(ahead.start if ahead is not None else None)
        except BaseException:
            if ahead is not None:
                ahead.close()
            raise
        if ahead is not None and not ahead.started:  # (the cached index was used: nothing to solve)
            ahead = None
        t = time.perf_counter()
        # The prefilter runs in this process: it reads every file's summary and much of the
        # index (cheap once the index's memos are warm), which in forked workers would copy
        # most of the shared pages; workers get only the files to analyse. On a large project
        # with workers, they are forked first and analyse each file as the prefilter keeps it
        # (largest first), the prefilter going on beside them (`_prefilter_streamed`).
        skipped: list[str] = []
        failed: list[BaseException] = []

        def prefilter(tasks: list) -> Iterator[tuple[str, str, str, str]]:
            # (An error ends the selection and is raised after the results: in the pool's task
            # thread it would be lost and the results never end.)
            try:
                for path, rel, module, digest, sdig in tasks:
                    if engine.needs_full_analysis(summary_by_digest(sdig), _W_INDEX):
                        yield path, rel, module, digest
                    else:
                        skipped.append(rel)
            except Exception as e:  # (a _CacheMiss: the run is retried)
                failed.append(e)

        if ahead is not None:
            # The workers forked before the fixpoint have parsed the files they were given;
            # they go on parsing while this process selects, then analyse what it selected.
            try:
                _collect_again()
                results = ahead.run(_W_INDEX, prefilter(to_analyze))
                if failed:
                    raise failed[0]
            except BaseException:
                ahead.close()
                raise
            t = stats.phase("prefilter", t)
        elif big:
            _load_analysis()
            _collect_again()
            results = _prefilter_streamed(prefilter(to_analyze), jobs)
            t = stats.phase("prefilter", t)
        else:
            selected = list(prefilter(to_analyze))
            if failed:
                raise failed[0]
            t = stats.phase("prefilter", t)
            work = sum(_size(t[0]) for t in selected)
            n = jobs if work >= _PARALLEL_MIN_BYTES // 10 else 1
            if n > 1 and len(selected) > 1:
                _load_analysis()
            _collect_again()
            results = _map(_analyze_task, selected, n, chunksize=1)
        for rel, digest, found, error, took in results:
            stats.slowest.append((took, rel))
            stats.analyzed += 1
            if error is not None:
                errors[rel] = error
                continue
            raw[rel] = [finding_from_dict(d) for d in found]
            if cache is not None and digest is not None and not reference:
                cache.put_findings(rel, pending_keys[rel], found, None)
        if failed:
            raise failed[0]
        for rel in skipped:  # (here, when the prefilter is done: it may run beside this loop)
            stats.prefiltered += 1
            stats.skipped.add(rel)
            raw[rel] = []
            if cache is not None and not reference:
                cache.put_findings(rel, pending_keys[rel], [], prefilter_key(records[rel]))
        _W_INDEX = None

    t = stats.phase("analysis", t)
    if cache is not None:
        if set(project_files) >= target_set:
            cache.forget_missing(set(by_rel))
        cache.save()
    t = stats.phase("cache-save", t)
    stats.slowest = sorted(stats.slowest, reverse=True)[:10]

    # 5. selection, severities, suppressions
    rule_filter = RuleFilter(config)
    final: list[Finding] = []
    for rel, found in raw.items():
        f = by_rel[rel]
        final.extend(postprocess(found, f, records[rel], rule_filter))
    final.sort(key=lambda x: (x.path, x.line, x.column, x.code))
    file_errors = [FileError(by_rel[rel].display, msg) for rel, msg in sorted(errors.items()) if by_rel[rel].target]
    return LintResult(final, file_errors, raw, {f.display: f for f in files if f.target}, stats, index)


def postprocess(found: list[Finding], f: SourceFile, rec: FileRecord, rule_filter: RuleFilter) -> list[Finding]:
    """Raw engine findings of one file -> what the user sees (display path, selection,
    per-file ignores, severity overrides, suppressions and unused-suppression findings)."""
    rel_for_rules = f.rel
    out = []
    for x in found:
        if not rule_filter.reported(x.code, rel_for_rules):
            continue
        out.append(_replace(x, path=f.display, severity=rule_filter.shown_severity(x)))
    supps = [sup.Suppression.from_list(s) for s in rec.suppressions]
    if supps:
        out = sup.apply(out, supps, f.display, lambda code: rule_filter.reported(code, rel_for_rules))
        out = [x if x.code != sup.UNUSED_SUPPRESSION.code else
               _replace(x, severity=rule_filter.severity(x.code, x.severity)) for x in out]
    if rule_filter.config.confidence == CERTAIN:
        # After the suppressions: a comment that silences a guessed finding is still used.
        out = [x for x in out if x.confidence == CERTAIN]
    return out


def _replace(f: Finding, **kw: Any) -> Finding:
    from dataclasses import replace

    return replace(f, **kw)


# Beyond this many files whose lines moved since the cached index was built, rebuilding it
# (and caching the result) is better than moving every run's lines again.
_MAX_RELOCATED = 64


def _relocated(loaded, summarized, summary_dict, stats: RunStats, library_env: str = "",
               library_path: tuple = ()):
    """The cached index brought to the current summaries without a rebuild, or None (rebuild).

    Files whose summaries changed since the index was built (its base) are, each, either moved
    (only positions changed: `relocate_index` moves the lines the index quotes) or changed in
    their functions and methods in a way nothing outside the file can read (`plan_change`: the
    changed functions and their readers in the file are re-solved with every other fact fixed).
    Anything else — files added or removed, a module-level change (a class's attributes, a
    global), a changed name mentioned elsewhere (a method's bare name; the class of a changed
    `__init__`), another special method, a changed construction or a callback in what changed,
    too many files — rebuilds, and says why in `stats.relocation_refused`."""
    from mcjax_lint.analysis.relocate import (
        Unrelocatable,
        forget_changes,
        line_map,
        mentions_of,
        plan_change,
        relocate_index,
        resolve_changes,
    )

    base, index = loaded
    if set(base) != {rel for rel, _ in summarized} or not getattr(index, "converged", False):
        stats.relocation_refused = "files added or removed" if getattr(index, "converged", False) else "index did not converge"
        return None
    if getattr(index, "library_env", "") != library_env:
        stats.relocation_refused = "installed libraries changed"
        return None
    drift = [(rel, r) for rel, r in summarized if base[rel] != r.summary_digest]
    if not drift:
        return index
    if len(drift) > _MAX_RELOCATED:
        stats.relocation_refused = f"{len(drift)} files changed"
        return None
    moves, current, changed = {}, {}, []
    for rel, r in drift:
        try:
            old, new = summary_dict(base[rel]), summary_dict(r.summary_digest)
        except _CacheMiss:
            stats.relocation_refused = "a base summary is gone"
            return None
        m = line_map(old, new)
        current[rel] = engine.ModuleSummary.from_dict(new)
        if library_env and not libraries.same_outside_names(engine.ModuleSummary.from_dict(old), current[rel],
                                                            library_path):
            # The file now uses a name from outside the project it did not use: the library
            # modules behind it may not be in the index (mcjax_lint/libraries.py).
            stats.relocation_refused = "new names used from outside the project"
            return None
        if m is None:
            changed.append((rel, old, new))
        else:
            moves[rel] = m
    try:
        plans = []
        for rel, old, new in changed:
            others = set()
            for rel2, _, new2 in changed:
                if rel2 != rel:
                    others |= mentions_of(new2)
            plans.append(plan_change(index, old, new, current[rel], others))
        forget_changes(index, plans)
        for plan in plans:
            moves[plan.path] = plan.lines
        relocate_index(index, moves, current, partial={p.path for p in plans})
        resolve_changes(index, plans)
    except Unrelocatable as e:
        stats.relocation_refused = str(e)
        return None
    stats.relocated = len(moves) - len(plans)
    stats.resolved = len(plans)
    return index


class _CacheMiss(Exception):
    """A summary the cache promised is gone (deleted by hand, a concurrent prune)."""


def _size(path: str) -> int:
    try:
        return os.stat(path).st_size
    except OSError:
        return 0
