"""Report data model, shared by divergence detection (guard) and post-mortem (stacks).

Everything here is plain data with `to_dict`/`from_dict` so a report can be written as JSON,
shipped between hosts, and re-rendered later by `mcjax-guard report DIR`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

# Report kinds, as the JSON `kind` field spells them.
KINDS = ("divergence", "missing", "exited", "died", "hang", "snapshot")
# Per-process status, after PyTorch's desync debug vocabulary.
STATUSES = ("ok", "diverged", "never-joined", "exited", "died", "hung", "unknown")


@dataclass
class Location:
    file: str
    line: int
    function: str = ""
    source: str = ""  # the source line, stripped

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Dispatch:
    """One cross-process computation as the guard saw it."""

    seq: int  # 1-based sequence number of this dispatch in its process
    name: str  # computation name, e.g. "jit(train_step)"
    fields: dict[str, str] = field(default_factory=dict)  # program, in_shapes, in_dtypes, ... as text
    location: Location | None = None


@dataclass
class Frame:
    name: str
    file: str
    line: int
    module: str = ""
    locals: dict[str, str] | None = None
    native: bool = False  # a C/C++ frame (py-spy --native): `file` is the shared library, `line` is 0


@dataclass
class Thread:
    thread_id: int
    name: str
    frames: list[Frame]  # innermost first, as py-spy reports them
    active: bool = True  # py-spy's "active" (not idle)
    is_main: bool = False  # the process's main thread


@dataclass
class StackSnapshot:
    taken_at: float  # unix time
    method: str  # "py-spy", "py-spy --native", "faulthandler", ...
    threads: list[Thread]
    note: str = ""
    stopped: bool = False  # the process was stopped by a signal (SIGSTOP, a debugger): frozen


@dataclass
class ProcessReport:
    process_index: int
    status: str = "unknown"
    pid: int | None = None
    host: str = ""
    location: Location | None = None  # where the process is, or was when it diverged/exited
    dispatch: Dispatch | None = None  # the dispatch at the point of interest (divergent / last)
    last_seq: int = 0  # last dispatch sequence number published
    exit_code: int | None = None
    snapshots: list[StackSnapshot] = field(default_factory=list)
    note: str = ""
    # Post-mortem (filled from the stacks): what the main thread waits on ("a collective (gloo
    # all-reduce)", "time.sleep", ...) and whether it moved between snapshots: "stuck", "moving",
    # "frozen" (stopped by a signal), or "" when unknown (one snapshot, or none).
    blocked_on: str = ""
    progress: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "ProcessReport":
        return _build(cls, d)


@dataclass
class Report:
    kind: str
    summary: str
    processes: list[ProcessReport]
    created: float = 0.0
    job_id: str = ""
    seq: int | None = None  # the first divergent / missing dispatch number
    differing_fields: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    merged_stacks: dict[str, Any] | None = None  # merged call tree (post-mortem), see docs/report-format.md
    guard: dict[str, Any] = field(default_factory=dict)  # guard settings and versions
    # mcjax-lint findings that explain the report ({code, severity, path, line, end_line, message,
    # site}; runtime_guard/causes.py): None when not looked for, [] when none explains it.
    causes: list[dict[str, Any]] | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Report":
        return _build(cls, d)


def _build(cls: type, d: Any, path: str = "") -> Any:
    """Rebuild nested dataclasses from `asdict` output (tolerant of extra keys). A value of the
    wrong type raises ValueError naming its place ("processes[1].exit_code: expected int, got
    str"), so a malformed report file is one clear line, not a traceback later in a renderer."""
    import typing

    if d is None:
        return None
    if not isinstance(d, dict):
        raise ValueError(f"{path or 'report'}: expected an object, got {_tname(d)}")
    hints = typing.get_type_hints(cls)
    kwargs = {}
    for f in fields(cls):
        if f.name not in d:
            continue
        kwargs[f.name] = _convert(hints[f.name], d[f.name], f"{path}.{f.name}" if path else f.name)
    obj = cls(**kwargs)
    if cls is Report and obj.kind not in KINDS:
        raise ValueError(f"kind: {obj.kind!r} is not one of {', '.join(KINDS)}")
    return obj


_PLAIN = {str: (str,), int: (int,), float: (int, float), bool: (bool,), dict: (dict,), list: (list,)}


def _tname(v: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", type(None): "null"}.get(type(v), type(v).__name__)


def _convert(tp: Any, value: Any, path: str) -> Any:
    import dataclasses
    import types
    import typing

    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        if value is None:
            return None
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value, path) if len(inner) == 1 else value
    if value is None:
        raise ValueError(f"{path}: expected {getattr(tp, '__name__', tp)}, got null")
    if origin is list:
        if not isinstance(value, list):
            raise ValueError(f"{path}: expected a list, got {_tname(value)}")
        return [_convert(args[0], v, f"{path}[{i}]") for i, v in enumerate(value)] if args else value
    if origin is dict:
        if not isinstance(value, dict):
            raise ValueError(f"{path}: expected an object, got {_tname(value)}")
        return value
    if dataclasses.is_dataclass(tp):
        return _build(tp, value, path)
    ok = _PLAIN.get(tp)
    if ok is not None and (not isinstance(value, ok) or (tp is not bool and isinstance(value, bool))):
        raise ValueError(f"{path}: expected {tp.__name__}, got {_tname(value)}")
    return value
