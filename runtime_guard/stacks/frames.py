"""Which frames are the user's, and what a stack is blocked on.

A hang report must make the user's code stand out from JAX/jaxlib/stdlib internals, yet keep
the one internal frame that says what the process waits on (a gloo all-reduce, a coordination
service barrier, `time.sleep`, ...). Both decisions are made here, from frame names and paths
only, so they work on py-spy (with or without native frames) and faulthandler stacks alike.
"""

from __future__ import annotations

import ast
import linecache
import os
import re
import sysconfig
from dataclasses import dataclass

from runtime_guard.report.model import Frame

_LIB_MARKERS = ("/site-packages/", "/dist-packages/", "/jax/_src/", "/jax/experimental/", "/jaxlib/", "/runtime_guard/")


def _stdlib_dirs() -> tuple[str, ...]:
    dirs = set()
    for key in ("stdlib", "platstdlib"):
        p = sysconfig.get_paths().get(key)
        if p:
            dirs.add(os.path.realpath(p) + os.sep)
            dirs.add(p.rstrip(os.sep) + os.sep)
    return tuple(sorted(dirs))


_STDLIB = _stdlib_dirs()
# Another host's interpreter may live elsewhere: .../lib/python3.X/<module>.py is stdlib too.
_STDLIB_RE = re.compile(r"/lib/python3\.\d+/(?!site-packages/|dist-packages/)")


def is_library(frame: Frame) -> bool:
    """Native, stdlib, site-packages, JAX or mcjax's own frames: everything that is not the user's."""
    if frame.native:
        return True
    f = frame.file
    if f.startswith("<frozen ") or f.startswith("<built-in"):
        return True
    if "/runtime_guard/examples/" in f:
        return False  # the example programs mcjax ships (`mcjax-guard demo`) play the user's part
    if any(m in f for m in _LIB_MARKERS):
        return True
    return f.startswith(_STDLIB) or bool(_STDLIB_RE.search(f))


def short_path(path: str) -> str:
    """A readable path: relative to the current directory when inside it, the part after
    site-packages/ or pythonX.Y/ for libraries, the path itself otherwise."""
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in path:
            return path.split(marker, 1)[1]
    m = _STDLIB_RE.search(path)
    if m:
        return path[m.end():]
    if os.path.isabs(path):
        try:
            rel = os.path.relpath(path)
        except ValueError:
            return path
        if not rel.startswith(".."):
            return rel
    return path


def source_line(file: str, line: int) -> str:
    if line <= 0:
        return ""
    try:
        return linecache.getline(file, line).strip()
    except Exception:  # noqa: BLE001 - a report must not fail over an unreadable file
        return ""


@dataclass
class Blocked:
    category: str  # collective, barrier, kv-store, device-wait, jit, sleep, lock, io, python, exit, unknown
    what: str  # human text: "a collective (gloo all-reduce)", "time.sleep", ...
    frame: Frame | None = None  # the frame that says so
    name: str = ""  # the function or call that matched (e.g. "sync_global_devices")

    @property
    def waits_on_peers(self) -> bool:
        """Blocked on other processes (they are what it waits for, not the culprit)."""
        return self.category in PEER_WAITS


PEER_WAITS = ("collective", "barrier", "kv-store")

# (regex on the frame name, category, description, regex the file must match or None). {0} is the
# last group of the match. The innermost match wins, but a wait on peers anywhere in the stack
# outranks it (see blocked_on).
Rule = tuple[re.Pattern[str], str, str, "re.Pattern[str] | None"]
_NATIVE_RULES: list[Rule] = [
    (re.compile(r"gloo::(allreduce|allgatherv?|broadcast|reduce_scatter|alltoallv?|reduce|gather|scatter|barrier)\b", re.I), "collective", "a collective (gloo {0})", None),
    (re.compile(r"\bnccl(AllReduce|AllGather|Broadcast|ReduceScatter|Send|Recv|GroupEnd|CommInitRank)", re.I), "collective", "a collective (NCCL {0})", None),
    (re.compile(r"(AllReduce|AllGather|AllToAll|ReduceScatter|CollectivePermute|CollectiveThunk)"), "collective", "a collective ({0})", None),
    (re.compile(r"WaitAtBarrier"), "barrier", "a coordination-service barrier (wait_at_barrier)", None),
    (re.compile(r"BlockingKeyValueGet"), "kv-store", "a coordination-service key-value get", None),
    (re.compile(r"BlockUntilReady"), "device-wait", "block_until_ready", None),
    (re.compile(r"^(time_sleep|clock_nanosleep|nanosleep|__nanosleep)$"), "sleep", "time.sleep", None),
    (re.compile(r"(PyThread_acquire_lock|pthread_cond_wait|sem_wait|sem_timedwait)"), "lock", "a lock or condition", None),
    (re.compile(r"^(select|poll|epoll_wait|__poll|__select|recv|recvfrom|read|__libc_recv|__libc_read|accept4?)$"), "io", "I/O ({0})", None),
    (re.compile(r"PjitFunction::Call|ExecuteSharded|PjRtLoadedExecutable::Execute"), "jit", "a jitted computation (PjitFunction::Call)", None),
]
# Python frames of libraries (py-spy spells methods Class.method, faulthandler just method).
_PY_RULES: list[Rule] = [
    (re.compile(r"(?:^|\.)(wait_at_barrier)$"), "barrier", "a coordination-service barrier (wait_at_barrier)", None),
    (re.compile(r"(?:^|\.)(blocking_key_value_get(?:_bytes)?)$"), "kv-store", "a coordination-service key-value get", None),
    (re.compile(r"(?:^|\.)(sync_global_devices|process_allgather|broadcast_one_to_all|assert_equal)$"), "collective", "a collective (multihost_utils.{0})", re.compile(r"multihost_utils")),
    (re.compile(r"(?:^|\.)(block_until_ready)$"), "device-wait", "block_until_ready", None),
    (re.compile(r"(?:^|\.)(sleep)$"), "sleep", "time.sleep", None),
    (re.compile(r"(?:^|\.)(acquire|wait|join|get)$"), "lock", "a lock or condition ({0})", re.compile(r"(threading|queue|multiprocessing/\w+|concurrent/futures/\w+)\.py$")),
    (re.compile(r"(?:^|\.)(__call__)$"), "jit", "a jitted computation", re.compile(r"pxla\.py$")),
    # The guard's own exit path (the program has left: its frames are gone from the stack).
    (re.compile(r"(?:^|\.)(mark_exit)$"), "exit", "leaving the program (the guard was publishing its exit)", re.compile(r"runtime_guard/")),
    # JAX's atexit shutdown: its barrier waits until every process reaches the end of the program.
    (re.compile(r"(?:^|\.)(shutdown)$"), "exit", "leaving the program (JAX's shutdown barrier, which waits for every process)", re.compile(r"jax/_src/distributed\.py$")),
]
# Calls on the innermost user line (a C function like time.sleep leaves no Python frame).
_CALL_RULES: list[Rule] = [
    (re.compile(r"(?:^|\.)(wait_at_barrier)$"), "barrier", "a coordination-service barrier (wait_at_barrier)", None),
    (re.compile(r"(?:^|\.)(blocking_key_value_get(?:_bytes)?)$"), "kv-store", "a coordination-service key-value get", None),
    (re.compile(r"(?:^|\.)(sync_global_devices|process_allgather|broadcast_one_to_all)$"), "collective", "a collective (multihost_utils.{0})", None),
    (re.compile(r"(?:^|\.)(block_until_ready)$"), "device-wait", "block_until_ready", None),
    (re.compile(r"(?:^|\.)(sleep)$"), "sleep", "{name}", None),
    (re.compile(r"(?:^|\.)(acquire|join)$"), "lock", "a lock or thread ({name})", None),
]
_NICE = {"allreduce": "all-reduce", "allgather": "all-gather", "allgatherv": "all-gather", "reduce_scatter": "reduce-scatter",
         "reducescatter": "reduce-scatter", "alltoall": "all-to-all", "alltoallv": "all-to-all"}


def _match(rules: list[Rule], name: str, file: str = "") -> tuple[str, str] | None:
    for rx, cat, text, file_rx in rules:
        m = rx.search(name)
        if m and (file_rx is None or file_rx.search(file)):
            arg = next((g for g in reversed(m.groups()) if g), m.group(0))
            return cat, text.format(_NICE.get(arg.lower(), arg), name=name)
    return None


def calls_on_line(source: str) -> list[str]:
    """Dotted names of the calls on one source line, outermost call last (`total(x).block_until_ready()`
    → ['total', 'total.block_until_ready'] roughly); [] when the line does not parse alone."""
    try:
        tree = ast.parse(source.strip().rstrip(":") if source.strip().endswith(":") else source.strip())
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            out.append(_dotted(node.func))
    return [n for n in reversed(out) if n]


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return ""


def blocked_on(frames: list[Frame], active: bool | None = None, source_of=source_line) -> Blocked:
    """What a thread (frames innermost first) is blocked on. Native frames are the most precise;
    without them the Python frames of JAX's API, then the calls on the innermost user line."""
    found: list[Blocked] = []
    for f in frames:
        if not f.native and not is_library(f):
            continue  # the user's own function names say nothing about what blocks
        m = _match(_NATIVE_RULES if f.native else _PY_RULES, f.name, f.file)
        if m:
            found.append(Blocked(m[0], m[1], f, f.name.rsplit(".", 1)[-1]))
    user = next((f for f in frames if not is_library(f)), None)
    if user is not None and (not found or user is frames[0] or all(f.native for f in frames[: frames.index(user)])):
        # Innermost Python frame is the user's: the call on its line is what it is in.
        for name in calls_on_line(source_of(user.file, user.line)):
            m = _match(_CALL_RULES, name)
            if m:
                found.append(Blocked(m[0], m[1], user, name.rsplit(".", 1)[-1]))
                break
    if found:
        leaving = next((b for b in found if b.category == "exit"), None)
        if leaving is not None:
            return leaving  # the program has left; what the guard's exit path waits on is part of that
        peers = [b for b in found if b.waits_on_peers]
        if not peers:
            return found[0]
        mechanism = next((b for b in peers if b.frame is not None and b.frame.native), None)
        api = next((b for b in reversed(peers) if b.frame is None or not b.frame.native), None)
        if mechanism is not None and api is not None and api.name and api.name not in mechanism.what:
            # e.g. "a collective (gloo all-gather) in sync_global_devices"
            return Blocked(mechanism.category, f"{mechanism.what} in {api.name}", mechanism.frame, api.name)
        # No native frames: the outermost API (what the user called) says most.
        return api or peers[0]
    if active:
        return Blocked("python", "running Python code", frames[0] if frames else None)
    return Blocked("unknown", "", frames[0] if frames else None)


_PHRASE = {
    "collective": "in {what}",
    "barrier": "in {what}",
    "kv-store": "in {what}",
    "device-wait": "in block_until_ready",
    "jit": "in {what}",
    "sleep": "in {what}",
    "lock": "waiting on {what}",
    "io": "waiting on {what}",
    "python": "running Python code",
    "exit": "{what}",
    "unknown": "",
}


def phrase(b: Blocked) -> str:
    """'in a collective (gloo all-reduce)', 'in time.sleep', ... for a sentence."""
    return _PHRASE.get(b.category, "in {what}").format(what=b.what).strip()
