"""The guard inside one process: hooks JAX's dispatch, records, exchanges, reacts to verdicts.

    import runtime_guard
    runtime_guard.install(mode="fast")          # before jax.distributed.initialize()
    with runtime_guard.guarded(mode="strict"):  # or as a context manager
        ...

`mcjax-guard python train.py` does the same without any change to the program.
"""

from __future__ import annotations

import copy
import functools
import os
import sys
import threading
import time
import weakref
from dataclasses import replace
from pathlib import Path
from types import CodeType
from typing import Any, Callable

from runtime_guard import compat, hotpath, observe
from runtime_guard.exchange import Exchange, Registry, strict_barrier_id
from runtime_guard.kv import KV, KVError
from runtime_guard.recorder import _FOLD_MASK, _RING_MASK, _SIZE, Recorder
from runtime_guard.settings import EXIT_DETECTED, GuardSettings
from runtime_guard.signature import exec_fields, exec_key, function_identity, stable_hash, value_identity
# Imported with the guard, not when a DivergenceError is raised: an import then parses the module
# (pytest rewrites a plugin's modules with `ast`) while another thread may be parsing too (3.11's
# traceback formatting parses source lines to place its carets); CPython 3.11 keeps the AST
# constructor's recursion depth per interpreter, not per thread, and two threads in it at once
# fail with "SystemError: AST constructor recursion depth mismatch" (seen in a plugin test).
from runtime_guard.report.model import Report
from runtime_guard.report.render_text import render_text


class DivergenceError(RuntimeError):
    """Raised in every process (strict mode) before a collective that would not match."""

    def __init__(self, report: dict) -> None:
        self.report = report
        super().__init__(_one_line(report))


def _one_line(report: dict) -> str:
    try:
        return "\n" + render_text(Report.from_dict(report))
    except Exception:
        return str(report.get("summary", report))


# What a jit wrapper has been seen to run (bits): executables local to this process, over every
# process, over a subset of the processes (a sub-mesh: a pipeline stage, say), over several
# processes but exchanging nothing between devices (local work: see `compat.executable_communicates`).
_UNKNOWN, _LOCAL, _MULTI, _SUBSET, _QUIET = 0, 1, 2, 4, 8
_CROSS = _MULTI | _SUBSET
_SEVERAL: tuple = ()  # GuardedJit._subset when the wrapper has run over more than one subset
_tl = compat.thread_state()
_in_trace = compat.in_trace_or_disabled_jit
_concrete = compat.concrete_result
_Array: type = type(None)  # jax.Array's class (a jit call's usual result), bound by the first GuardedJit
_arg_shapes: Callable[[tuple], int] = None  # type: ignore[assignment]  # bound by the first GuardedJit


@functools.lru_cache(maxsize=4096)
def _kw_layout(names: tuple[str, ...]) -> tuple[int, tuple[str, ...]]:
    """(stable hash, order) of a call's keyword names, in the order they were passed: sorted, so
    `f(x, a=1, b=2)` and `f(x, b=2, a=1)` agree, and hashed stably (`hash()` of strings differs
    between processes)."""
    order = tuple(sorted(names))
    return stable_hash("kw", *order), order


_STREAM_FLIGHT_FILES = 32  # subset streams given a flight file of their own, at most

_KW_MIX = 0x9E3779B97F4A7C15  # odd: multiplying by it is a bijection on 64-bit hashes


def _statics_hash(cache: dict, vals: tuple) -> int:
    """Stable hash of one function's static argument values, cached by value as JAX caches its
    executables (per function, by equality: `value_identity` gives equal values one text)."""
    try:
        h = cache.get(vals)
    except TypeError:  # unhashable: JAX itself will refuse the call
        return stable_hash("static", *map(value_identity, vals))
    if h is None:
        if len(cache) > 1024:
            cache.clear()
        h = cache[vals] = stable_hash("static", *map(value_identity, vals))
    return h


# The guarded call in progress on this thread, as a plain list (cheaper than an object on the hot
# path): [wrapper or None, code, line, seq recorded before the call or 0, recorded during the call,
# the key its records carry, seq recorded before the call in a subset's stream or 0, that stream].
_WRAPPER, _CODE, _LINE, _PRE, _RECORDED, _KEY, _SPRE, _STREAM = range(8)
_getframe = sys._getframe
_MISSING = object()
_EXEC_CODE: CodeType | None = None  # code of the hook frame running an executable (compat.DispatchHooks)


def _current_call() -> list | None:
    """The guarded call in progress on this thread, for the hooks on JAX's Python path (never the
    hot path). A slow-path wrapper or an AOT call publishes it in thread state; the fast path
    publishes nothing (thread-local traffic and a try/finally were a third of its cost) and is
    found on the stack instead: the C base's call (no frame of its own) by its caller's frame, the
    Python path's as the nearest `GuardedJit._call_py` frame, by its locals."""
    published = getattr(_tl, "call", None)
    c = _c_current() if _c_current is not None else None  # the innermost call on the C hot path
    f = _getframe(2)
    if f is not None and f.f_code is _EXEC_CODE:
        f = f.f_back  # the hook's own executable
    while f is not None:
        if f.f_code is _EXEC_CODE:
            # Another executable is being run below the call: this computation runs inside that
            # one's dispatch (JAX slicing a process-local argument into shards runs a small jit
            # of its own there). It is not the call, nor what the call runs.
            return None
        if c is not None and f is c[0]:  # that call's caller: no frame of ours in between
            _, w, site, line, pre, key = c
            return [w, w._guard.recorder.code_of(site), line, pre, False, key, 0, None]
        code = f.f_code
        if code is _FAST_CODE:
            loc = f.f_locals
            w = loc.get("self")
            if "pre" not in loc or w is None:
                return None  # not recording yet (cannot happen: the hooks run inside the call)
            if loc["pre"] == -1:  # a local wrapper's short path: nothing read yet
                return w._late_call(f.f_back, loc.get("args", ()), loc.get("kwargs") or {})
            return [w, w._guard.recorder.code_of(loc["site"]), loc["line"], loc["pre"], False, loc["key"], 0, None]
        if published is not None and (code is _SLOW_CODE or code is _AOT_CODE):
            return published
        f = f.f_back
    return published


# GuardedJit's base: the C hot path's type, whose `tp_call` does the fast path without a Python
# frame (hotpath.py), or `object`, the Python path doing it in `__call__`.
_JitBase: type = hotpath.jit_base() or object
_c_current = hotpath.current_function() if _JitBase is not object else None
# What the C base holds (GuardedJit's own slots otherwise).
_C_FIELDS = ("_jitted", "_guard", "_key", "_kind", "_hp", "_statics")


class _Busy:
    """The Python twin of the C hot path's count of recorded cross-process calls in flight (see
    `_hotpath.c`, busy_enter): a call that starts while another thread's is in flight, and whose
    record is kept, is an overlap (their pairing with the other processes depends on scheduling)."""

    __slots__ = ("busy_thread", "busy_n", "busy_seq", "overlaps", "overlap_seq", "overlap_with", "_lock")

    def __init__(self) -> None:
        self.busy_thread = self.busy_n = self.busy_seq = 0
        self.overlaps = self.overlap_seq = self.overlap_with = 0
        self._lock = threading.Lock()

    def enter(self, seq: int) -> int | None:
        me = threading.get_ident()
        with self._lock:
            other = self.busy_n > 0 and self.busy_thread != me
            if self.busy_n == 0:
                self.busy_thread, self.busy_seq = me, seq
            self.busy_n += 1
            return self.busy_seq if other else None

    def leave(self, token: int | None, kept: bool, seq: int) -> None:
        with self._lock:
            self.busy_n = max(0, self.busy_n - 1)
            if token is not None and kept:
                if not self.overlaps:
                    self.overlap_seq, self.overlap_with = seq, token
                self.overlaps += 1


class GuardedJit(_JitBase):
    """Stands in for a `jax.jit` object: same call, attributes and method binding; records each
    cross-process dispatch while keeping JAX's C++ fast path.

    A call of a function known to run across processes is recorded *before* it runs, so a
    dispatch that hangs or crashes inside is still attributed. First calls (and any call that
    compiles) are recorded by the Python-path hook, also before they run."""

    # `_sites`, `_names` and `_rec` are the guard's call-site cache, registry names and recorder,
    # held here so that the hot path reads one slot for each rather than a chain of attributes.
    __slots__ = ("_subset", "_sites", "_names", "_rec", "_static_cache", "__weakref__") + (
        _C_FIELDS if _JitBase is object else ())

    def __init__(self, jitted: Any, guard: "Guard", identity: tuple[int, Any, str] | None = None) -> None:
        """`identity`: (key, statics, name) of the wrapper whose jit object `jitted` is a copy or an
        unpickled twin of (those lack the attributes JAX's Python code set on the original, from
        which the identity is read)."""
        global _arg_shapes, _Array
        if _arg_shapes is None:
            _arg_shapes, _Array = compat.make_arg_shapes(), compat.array_type()
        self._jitted = jitted
        self._guard = guard
        self._sites, self._names, self._rec = guard._sites, guard.registry.names, guard.recorder
        self._hp = guard.hot_path()
        if identity is not None:
            self._key, self._statics, name = identity
        else:
            fun = compat.jit_function(jitted)
            name, ident = function_identity(fun) if fun is not None else (repr(jitted), repr(jitted))
            name = f"jit({name})"
            # The function's code and options (see `function_identity`: data it is bound to is not
            # in it; what of that data reaches the program is in the program's hash at compile time).
            self._key = stable_hash("jit", ident, compat.jit_options_text(jitted))
            self._statics = compat.jit_statics(jitted)
        guard.registry.name(self._key, name)
        self._static_cache: dict = {}
        self._kind = _UNKNOWN
        self._subset: tuple | None = None  # the subset of processes it runs over (_SUBSET), or _SEVERAL
        # A new jit object of a function already seen may hit the executables its predecessors
        # compiled (`jax.jit(f)(x)` at a call site makes one per call; the last is long gone).
        siblings = guard._by_key.setdefault(self._key, weakref.WeakSet())
        for v in siblings:
            self._kind, self._subset = v._kind, v._subset
            break
        else:
            self._kind, self._subset = guard._kinds.get(self._key, (_UNKNOWN, None))
        siblings.add(self)

    def _call_py(self, /, *args: Any, **kwargs: Any) -> Any:
        """A call, in Python: `__call__` itself without the C base, and where the C base's
        `tp_call` hands a call over (any call but a hot one, or one it cannot record)."""
        guard = self._guard
        kind = self._kind
        if kind != _MULTI or not guard._fast:
            if kind and not kind & _CROSS and guard._fast:
                # Only ever ran work local to this process: JAX's call and nothing else. Should a
                # hook on JAX's Python path run in it (new arguments that span the processes), it
                # finds this call by this frame and reads its site and key then (`_current_call`).
                pre = -1
                return self._jitted(*args, **kwargs) if kwargs else self._jitted(*args)
            return self._call_slow(args, kwargs)
        # The hot path: a function known to run across processes, fast mode. Recorded before the
        # call, so a hang or crash inside is attributed; whether it was traced (inside another
        # transformation) rather than dispatched is checked after it, from the result (cheaper
        # than asking JAX's trace state first). Its locals are what the Python-path hooks see of
        # this call, should JAX take that path (see `_current_call`).
        rec = self._rec
        key0 = self._key if not kwargs and self._statics is None else self._key ^ self._bound_key(args, kwargs)
        hot = self._hp.record(key0, args) if self._hp is not None else None
        if hot is not None:
            pre, site, line, key = hot  # recorded in C (see hotpath.py)
        else:
            try:
                frame = _getframe(1)
                hit = self._sites.get((id(frame.f_code) << 32) | frame.f_lasti)
            except ValueError:  # no Python caller: a thread's target, an atexit function
                frame = hit = None
            if hit is None:
                hit = guard.site_of_frame(frame)
                if guard.observer is not None:  # a new call position: learn its stack once
                    guard.observer.saw(frame)
            site, line = hit
            key = key0 ^ _arg_shapes(args)  # this call's variant: the function and its argument shapes
            if key not in self._names:
                self._name_variant(key, args, kwargs)
            # `Recorder.record_at`, inlined (the C path's twin). `with`, not acquire() and a
            # try/finally: a KeyboardInterrupt raised as acquire() returns would leave the lock
            # held, and the next dispatch, and the exchange thread at exit, waiting for ever.
            with rec.lock:
                pre = rec.seq = rec.seq + 1
                rec._pack(rec._buf, rec._base + (pre & _RING_MASK) * _SIZE, pre, key, 0, 0, site, line, rec.now)
                if not pre & _FOLD_MASK:
                    rec._fold()
        busy = guard._busy
        tok, kept = busy.enter(pre), False
        try:
            out = self._jitted(*args, **kwargs) if kwargs else self._jitted(*args)
            if type(out) is not _Array and not _concrete(out) and _in_trace():
                rec.undo(pre)  # traced, not dispatched
            elif rec.seq >= pre:  # (not taken back by a hook: it ran locally or over a subset)
                rec.settled = pre  # a cache hit (or compiled: its signature is attached)
                kept = True
        finally:
            busy.leave(tok, kept, pre)
        return out

    if _JitBase is object:
        __call__ = _call_py

    def _late_call(self, frame: Any, args: tuple, kwargs: dict) -> list:
        """The call in progress on `_call_py`'s short path, as `_current_call` returns it: its
        site and key, read now (what `_call_slow` reads before its call)."""
        guard = self._guard
        site, line = guard.site_of_frame(frame) if frame is not None else (0, 0)
        key = self._key ^ _arg_shapes(args)
        if kwargs or self._statics is not None:
            key ^= self._bound_key(args, kwargs)
        if key not in guard.registry.names:
            self._name_variant(key, args, kwargs)
        return [self, guard.recorder.code_of(site), line, 0, False, key, 0, None]

    def _settle(self, out: Any, pre: int) -> None:
        """After a call the C base recorded as `pre` returned a result it cannot tell dispatched
        (it settles concrete ones itself): what `_call_py` does after its call."""
        rec = self._rec
        if not _concrete(out) and _in_trace():
            rec.undo(pre)
        elif rec.seq >= pre:
            rec.settled = pre

    def _call_slow(self, args: tuple, kwargs: dict) -> Any:
        guard = self._guard
        if not guard.active:
            return self._jitted(*args, **kwargs)
        try:
            frame = _getframe(2)
            hit = guard._sites.get((id(frame.f_code) << 32) | frame.f_lasti)
        except ValueError:  # no Python caller: a thread's target, an atexit function
            frame = hit = None
        site, line = hit if hit is not None else guard.site_of_frame(frame)
        if hit is None and self._kind == _MULTI and guard.observer is not None:
            guard.observer.saw(frame)
        code = guard.recorder.code_of(site)
        key = compat.call_signature(self._key, args, kwargs) if guard._exact else self._key ^ _arg_shapes(args)
        if kwargs or self._statics is not None:
            key ^= self._bound_key(args, kwargs)
        if key not in guard.registry.names:
            self._name_variant(key, args, kwargs)
        kind = self._kind
        pre = spre = 0
        stream = None
        if kind == _MULTI and not guard.strict:
            pre = guard.recorder.record(key, 0, code, line)  # exact mode's hot path, as above
        elif kind == _SUBSET and self._subset:
            # Runs over one subset of the processes: recorded before the call in that subset's
            # stream, compared among its members only.
            stream = guard.stream(self._subset)
            spre = stream.record(key, 0, code, line)
        elif kind == _UNKNOWN and not guard.strict:
            # Never seen running: its arguments tell where it runs. A hit in JAX's C++ cache of
            # executables another jit object of this function compiled runs without any hook
            # seeing it, so a call that hangs there must be on record before it starts.
            procs = compat.args_processes(args, kwargs)
            if procs is not None and len(procs) >= guard.num_processes:
                pre = guard.recorder.record(key, 0, code, line)
        call = [self, code, line, pre, False, key, spre, stream]
        outer = getattr(_tl, "call", None)
        _tl.call = call
        busy = guard._busy
        tok = busy.enter(pre) if pre else None
        try:
            out = self._jitted(*args, **kwargs)
        finally:
            _tl.call = outer
            if pre:
                busy.leave(tok, call[_PRE] != 0 or call[_RECORDED], pre)
        if pre or call[_SPRE]:
            rec = guard.recorder if pre else call[_STREAM]
            seq = pre or call[_SPRE]
            if not _concrete(out) and _in_trace():
                rec.undo(seq)
            elif rec.seq >= seq:
                rec.settled = seq
        elif not call[_RECORDED] and (kind & _CROSS or kind == _UNKNOWN) and not _in_trace():
            # A cache hit of a function seen running over different sets of processes: where did
            # this one run?
            procs = compat.args_processes(args, kwargs)
            if procs is not None and len(procs) > 1:
                if len(procs) >= guard.num_processes:
                    if not guard.strict:
                        guard.recorder.record(key, 0, code, line)
                elif guard.process_index in procs:
                    guard.stream(tuple(sorted(procs))).record(key, 0, code, line)
        return out

    def _bound_key(self, args: tuple, kwargs: dict) -> int:
        """What keyword and static arguments add to a call's identity: the shapes and dtypes of
        arrays passed by keyword, and the values of static arguments, which pick the executable
        (`step(state, batch, train=is_chief)` runs another program on one process)."""
        h = 0
        if kwargs:
            h, order = _kw_layout(tuple(kwargs))
            # Mixed, not XORed as is: the positional shape hash is XORed into the same key, and
            # `f(x, y=z)` with x and z of one shape would cancel out.
            h ^= (_arg_shapes(tuple(map(kwargs.__getitem__, order))) * _KW_MIX) & 0xFFFFFFFFFFFFFFFF
        if self._statics is not None:
            nums, names = self._statics
            n = len(args)
            vals = tuple(args[i] for i in nums if -n <= i < n) + tuple(kwargs[k] for k in names if k in kwargs)
            if vals:
                h ^= _statics_hash(self._static_cache, vals)
        return h

    def _name_variant(self, key: int, args: tuple = (), kwargs: dict | None = None) -> None:
        """Name a call's variant after its function, and the values of its static arguments,
        which the report then compares field by field (the labelled twin of `_bound_key`'s
        values, built once per variant)."""
        reg = self._guard.registry
        name = reg.names.get(self._key, "?")
        if self._statics is not None:
            nums, names = self._statics
            n, kwargs = len(args), kwargs or {}
            parts = [f"arg{i % n}={value_identity(args[i])}" for i in nums if -n <= i < n]
            parts += [f"{k}={value_identity(kwargs[k])}" for k in names if k in kwargs]
            text = ", ".join(parts)
            if text:
                name += f" static({text if len(text) <= 80 else text[:79] + '…'})"
        reg.name(key, name)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return _BoundGuarded(self, obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._jitted, name)

    def __repr__(self) -> str:
        return f"<guarded {self._jitted!r}>"

    # Equal to (and hashed as) the jit object it stands for: a table keyed by a jit object made
    # before an in-code install still finds it through the wrapper that replaced it.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, GuardedJit):
            return other._jitted is self._jitted
        return other is self._jitted

    def __hash__(self) -> int:
        return hash(self._jitted)

    # Copied and pickled as the jit object is, and guarded again: `copy.deepcopy(trainer)` of an
    # object holding a jitted step works unguarded, so it must work guarded.
    def _identity(self) -> tuple[int, Any, str]:
        return self._key, self._statics, self._guard.registry.names.get(self._key, "?")

    def __copy__(self) -> "GuardedJit":
        return GuardedJit(copy.copy(self._jitted), self._guard, self._identity())

    def __deepcopy__(self, memo: dict) -> "GuardedJit":
        return GuardedJit(copy.deepcopy(self._jitted, memo), self._guard, self._identity())

    def __reduce__(self) -> tuple:
        return _rewrap, (self._jitted, self._identity())


def _rewrap(jitted: Any, identity: tuple[int, Any, str] | None = None) -> Any:
    """An unpickled jit object, guarded by this process's guard if it has one."""
    g = current()
    return GuardedJit(jitted, g, identity) if g is not None and g.active else jitted


class _BoundGuarded:
    __slots__ = ("_g", "_obj")

    def __init__(self, g: GuardedJit, obj: Any) -> None:
        self._g, self._obj = g, obj

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._g(self._obj, *args, **kwargs)

    # As a bound method copies: the same function, bound to the same (or the deep-copied) object.
    # (`__getattr__` would otherwise hand these to the unbound wrapper, which drops the object.)
    def __copy__(self) -> "_BoundGuarded":
        return _BoundGuarded(self._g, self._obj)

    def __deepcopy__(self, memo: dict) -> "_BoundGuarded":
        return _BoundGuarded(self._g, copy.deepcopy(self._obj, memo))

    def __reduce__(self) -> tuple:
        return _BoundGuarded, (self._g, self._obj)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._g, name)


_FAST_CODE = GuardedJit._call_py.__code__  # see `_current_call`


class _FromJitted(str):
    """A class attribute that reads as this text on the class and as the jit object's own
    attribute on a wrapper: a wrapper keeps its function's `__doc__` and `__module__` (help(),
    pickling by reference, frameworks that name things by module). A `str`, because `type`
    returns a class's `__module__` as stored; `__doc__` goes through `__get__(None, cls)`."""

    def __new__(cls, text: str, attr: str) -> "_FromJitted":
        self = super().__new__(cls, text)
        self.attr = attr
        return self

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return str(self)
        return getattr(obj._jitted, self.attr, None)

    def __reduce__(self) -> tuple:  # pickled (a class by reference, say) as the plain text
        return str, (str(self),)


GuardedJit.__doc__ = _FromJitted(GuardedJit.__doc__ or "", "__doc__")
GuardedJit.__module__ = _FromJitted(__name__, "__module__")


class Guard:
    def __init__(self, settings: GuardSettings) -> None:
        self.settings = settings
        self.strict = settings.mode == "strict"
        self._exact = settings.exact
        self.active = False
        self.flight = None
        if settings.state_dir:
            try:
                from runtime_guard.flight import FlightRecorder

                self.flight = FlightRecorder(settings.state_dir)
            except Exception as e:  # the flight recorder is an extra; the guard works without it
                self._say(f"no flight recorder: {e!r}")
        self.recorder = Recorder(self.flight)
        # Computations over a subset of the processes: one stream (numbering, rolling hash) per
        # subset this process belongs to, compared among the subset's members.
        self.streams: dict[tuple[int, ...], Recorder] = {}
        self.registry = Registry(self.flight.side if self.flight is not None else None)
        self.hooks = compat.DispatchHooks()
        self.exchange: Exchange | None = None
        self._er_info: "weakref.WeakKeyDictionary[Any, tuple[int, bool]]" = weakref.WeakKeyDictionary()
        self._me_multi: "weakref.WeakKeyDictionary[Any, bool]" = weakref.WeakKeyDictionary()
        self._user_code: dict[CodeType, bool] = {}
        # Hot-path call-site cache: (id(code) << 32 | instruction offset) -> (site id, line), for
        # user code only. `f_lineno` scans the code's line table (~4 µs at line 400 of a
        # function) and a code object's hash walks its bytecode, so neither is done per call; the
        # recorder's site table keeps the code objects alive, so their ids stay theirs.
        self._sites: dict[int, tuple[int, int]] = {}
        self._fast = False  # active, fast mode, not exact: GuardedJit's hot path applies (see `active`)
        self._hp: Any = False  # the C hot path, made on first use (None: not available)
        self._busy: Any = _Busy()  # cross-process calls in flight: the C hot path's, once made
        self._by_key: dict[int, weakref.WeakSet] = {}  # GuardedJit._key -> its wrappers (see `_mark`)
        self._kinds: dict[int, tuple[int, tuple | None]] = {}  # GuardedJit._key -> what its wrappers ran
        self._undo_init: Callable[[], None] | None = None
        self._undo_shutdown: Callable[[], None] | None = None
        self._undo_values: Callable[[], None] | None = None
        self.disabled_reason: str | None = None
        self.adopted = 0  # references to jit objects made before install() that were wrapped
        self._adopted_refs: list[tuple[Any, str, Any, Any]] = []  # (owner, name, jit object, wrapper)
        self.program = ""  # the script being run (set by the bootstrap), for exit points
        self.num_processes = 0
        self.process_index = 0
        self._lock = threading.Lock()
        # The functions seen dispatching cross-process work, for the linter (observe.py).
        self.observer = observe.observer_for(settings)

    @property
    def active(self) -> bool:
        return self._active

    @active.setter
    def active(self, on: bool) -> None:
        self._active = on
        self._fast = bool(on and not self.strict and not self._exact)
        if getattr(self, "_hp", None):
            self._hp.fast = self._fast  # what the C base's call reads

    # -- install -------------------------------------------------------------------------------

    def install(self) -> bool:
        reason = compat.check()
        if reason is not None:
            self.disabled_reason = reason
            self._say(f"guard disabled, running unguarded: {reason}")
            return False
        try:
            self.hooks.install(
                on_execute=self._on_execute,
                allow_fastpath=self._allow_fastpath,
                on_compiled_call=self._on_compiled_call,
                wrap_jit=lambda j: GuardedJit(j, self),
                on_compile=self._on_compile,
            )
            global _EXEC_CODE
            _EXEC_CODE = self.hooks.execute_code
            if self.settings.check_replicated:
                self._undo_values = compat.patch_replicated_inputs(self._on_replicated_data)
            self._undo_init = compat.patch_initialize(self._after_initialize, self._fill_initialize_args)
            self._undo_shutdown = compat.patch_shutdown(lambda: self.mark_exit(0, None), self.stop_threads)
            self._chain_excepthook()
            try:
                self.adopted = self._adopt_existing_jits()
            except Exception as e:  # an optimization: unadopted jit objects are still checked
                self._say(f"could not wrap jit objects made before the guard: {e!r}")
        except Exception as e:
            self.hooks.uninstall()
            self.disabled_reason = f"could not install hooks: {e!r}"
            self._say(f"guard disabled, running unguarded: {self.disabled_reason}")
            return False
        if compat.distributed_client() is not None:
            # Installed late: computations already cached on the C++ fast path would bypass the
            # hooks; clearing the caches costs one recompilation each.
            compat.clear_dispatch_caches()
            self._after_initialize()
        return True

    def _adopt_existing_jits(self) -> int:
        """Wrap the jit objects the program made before the guard was installed.

        An in-code `install()` usually comes after the program's imports, so its module-level
        `@jax.jit` functions are plain jit objects: every cross-process call of theirs would take
        JAX's Python dispatch path, where the guard sees it, at ~12x the cost of a cached call
        (measured: 180 µs against 14.5 µs a call on 2 CPU processes). Module globals and the
        attributes of classes defined in those modules are swapped for wrappers (one per jit
        object, wherever it is referenced); `from jax import jit` names and `partial(jax.jit,
        ...)` decorators get the guard's `jax.jit`. JAX's own modules are left alone. Returns
        how many references were replaced."""
        import jax

        patched = jax.jit
        orig = getattr(patched, "__wrapped__", None)
        if orig is None:
            return 0
        jit_type = type(orig(lambda: None))
        wrappers: dict[int, GuardedJit] = {}

        def swap(v: Any) -> Any:
            if type(v) is jit_type:
                w = wrappers.get(id(v))
                if w is None:
                    w = wrappers[id(v)] = GuardedJit(v, self)
                return w
            if v is orig:
                return patched
            if type(v) is functools.partial and v.func is orig:
                return functools.partial(patched, *v.args, **v.keywords)
            return None

        before = len(self._adopted_refs)

        def adopt(owner: Any, name: str, value: Any) -> None:
            new = swap(value)
            if new is None:
                return
            try:
                setattr(owner, name, new)
            except (AttributeError, TypeError):
                return
            self._adopted_refs.append((owner, name, value, new))

        for modname, mod in list(sys.modules.items()):
            if mod is None or modname == "jax" or modname.startswith(("jax.", "jaxlib", "runtime_guard")):
                continue
            try:
                items = list(vars(mod).items())
            except TypeError:
                continue
            for k, v in items:
                adopt(mod, k, v)
                if isinstance(v, type) and getattr(v, "__module__", None) == modname:
                    for ak, av in list(vars(v).items()):
                        adopt(v, ak, av)
        return len(self._adopted_refs) - before

    def _restore_adopted(self) -> None:
        """Put back the jit objects `_adopt_existing_jits` replaced (where nothing else has been
        assigned since)."""
        for owner, name, orig, new in reversed(self._adopted_refs):
            try:
                if owner.__dict__.get(name) is new:
                    setattr(owner, name, orig)
            except (AttributeError, TypeError):
                pass
        self._adopted_refs.clear()

    def _chain_excepthook(self) -> None:
        # In-code installs have no bootstrap to see an uncaught exception: record it on the way out
        # (and print it without the guard's frames, as the bootstrap does).
        from runtime_guard.report.user_traceback import install_excepthook

        install_excepthook()
        prev = sys.excepthook

        def hook(et: Any, ev: Any, tb: Any) -> None:
            try:
                self.mark_exit(1, ev)
            finally:
                prev(et, ev, tb)

        sys.excepthook = hook

    def stop_threads(self) -> None:
        """Stop the exchange threads and wait for them (at exit, after JAX's own shutdown)."""
        if self.exchange is not None:
            self.exchange.stop(wait=3.0)

    def reinit_locks_after_fork(self) -> None:
        """In a forked child: a lock that another thread of the parent held at the fork (the
        exchange thread folding, a thread dispatching) stays held for ever there, and the child's
        next record would wait for it. Only the forking thread runs on: each lock is made free."""
        locks = [self._lock, self.recorder.lock, *(r.lock for r in list(self.streams.values())),
                 getattr(self._busy, "_lock", None), getattr(self.observer, "_lock", None), compat._TRACED_LOCK]
        for lock in locks:
            reinit = getattr(lock, "_at_fork_reinit", None)  # (CPython 3.9+, what threading itself uses)
            if reinit is not None:
                reinit()

    def uninstall(self) -> None:
        self.active = False
        self.stop_threads()
        self.hooks.uninstall()
        for undo in (self._undo_init, self._undo_shutdown, self._undo_values):
            if undo is not None:
                undo()
        self._undo_init = self._undo_shutdown = self._undo_values = None
        self._restore_adopted()

    def _fill_initialize_args(self, kwargs: dict) -> dict:
        # `mcjax-guard -n N` tells each process who it is (over the program's own arguments).
        from runtime_guard.local_job import initialize_args

        return initialize_args(kwargs)

    def _after_initialize(self) -> None:
        ids = compat.distributed_ids()
        client = compat.distributed_client()
        if ids is None or client is None or self.exchange is not None:
            return
        if ids[1] >= 2 and self._separate_job(ids):
            return
        self.process_index, self.num_processes = ids
        if self.flight is not None:
            self.flight.set_process(self.process_index)
        if self.num_processes < 2:
            return
        kv = KV(client)
        try:
            self._check_agreement(kv)
        except _Disagreement as e:
            self._say(str(e))
            raise RuntimeError(f"mcjax-guard: {e}") from None
        except KVError as e:
            self._say(f"guard disabled: coordination service not usable ({e})")
            return
        self.exchange = Exchange(kv, self.recorder, self.registry, self.process_index, self.num_processes,
                                 self.settings, self._on_verdict, streams=self.streams)
        self.exchange.coordinator = compat.coordinator_address()
        self.exchange.overlap = self.overlap
        self.exchange.start()
        self.active = True

    def _separate_job(self, ids: tuple[int, int]) -> bool:
        """A worker of a program run with `mcjax-guard -n N` that joined a job of its own (see
        `local_job.separate_job`): the guard stays off here (its records and states would be
        taken for those of the launch's process with the same index) and leaves a note that the
        supervisor turns into one line."""
        from runtime_guard.local_job import separate_job

        addr = compat.coordinator_address()
        if not separate_job(addr):
            return False
        self.active = False
        if self.settings.state_dir:
            try:
                from runtime_guard.exchange import _atomic_json

                Path(self.settings.state_dir).mkdir(parents=True, exist_ok=True)
                _atomic_json(Path(self.settings.state_dir) / f"separate-{os.getpid()}.json",
                             {"pid": os.getpid(), "p": ids[0], "n": ids[1], "coordinator": addr})
            except Exception as e:
                self._say(f"this process joined a job of its own, unchecked ({e!r})")
        return True

    def _check_agreement(self, kv: KV) -> None:
        """All processes must run the guard with the same settings; say which one differs."""
        from runtime_guard import __version__

        mine = dict(self.settings.agreement_fields(), guard_version=__version__)
        kv.set(f"config/{self.process_index}", mine)
        kv.barrier("config", 120.0)
        theirs = {int(k): v for k, v in kv.dir("config/").items()}
        diffs = []
        for p, cfg in sorted(theirs.items()):
            for k, v in cfg.items():
                if theirs.get(0, {}).get(k) != v:
                    diffs.append(f"process {p} has {k}={v!r} but process 0 has {k}={theirs[0].get(k)!r}")
        missing = [p for p in range(self.num_processes) if p not in theirs]
        if missing:
            diffs.append(f"processes {missing} run without the guard")
        if diffs:
            raise _Disagreement("guard settings differ between processes: " + "; ".join(diffs))

    # -- hooks (called by JAX through compat) -----------------------------------------------------

    def _allow_fastpath(self, executable: Any) -> bool:
        if not self.active:
            return True
        multi = self._me_multi.get(executable, _MISSING)
        if multi is _MISSING:
            multi = compat.is_multiprocess_mesh_executable(executable)
            if not multi and compat.spans_processes(executable):
                multi = None  # over several processes, but exchanging nothing
            try:
                self._me_multi[executable] = multi
            except TypeError:
                pass
        if multi is None:
            # Not cross-process work, but over several processes. A wrapper that also runs
            # cross-process programs must see each call of it (at ~200 µs): a cache hit it cannot
            # see is taken for cross-process work by its arguments (see `_mark`).
            call = _current_call()
            w = call[_WRAPPER] if call is not None else None
            return w is None or not w._kind & _CROSS
        if not multi:
            return True
        # Cross-process: the C++ path may run it only where a wrapper sees each call.
        return not self.strict and _current_call() is not None

    def _exec_entry(self, er: Any, args: tuple) -> tuple[int, bool | None, tuple[int, ...] | None]:
        """(exact signature, spans every process (None: spans several but exchanges nothing), the
        subset of processes it spans or None)."""
        entry = self._er_info.get(er)
        if entry is None:
            info = compat.exec_info_from_replicated(er, args)
            exact = exec_key(info)
            # A program that exchanges nothing between devices needs no other process (process 0
            # reading an element of a replicated global array): it is checked as a local one.
            multi, subset = self._scope(info.processes)
            if not info.communicates and (multi or subset is not None):
                multi, subset = None, None
            entry = (exact, multi, subset)
            self._er_info[er] = entry
            self.registry.name(exact, info.name)
            self.registry.exact(exact, exact, exec_fields(info))
        return entry

    def _scope(self, processes: tuple[int, ...]) -> tuple[bool, tuple[int, ...] | None]:
        """(spans every process, the proper subset it spans): a computation over every process is
        the main stream; one over a subset that includes this process is that subset's stream."""
        procs = tuple(sorted(set(processes)))
        if len(procs) < 2:
            return False, None
        if len(procs) >= self.num_processes:
            return True, None
        return False, procs if self.process_index in procs else None

    def hot_path(self) -> Any | None:
        """The C hot path over this guard's caches and recorder (None: the Python path)."""
        if self._hp is False:
            try:
                self._hp = hotpath.make(self._sites, self.registry.names, self.recorder)
                if self._hp is not None:
                    self._hp.fast = self._fast
                    self._busy = self._hp  # one count for the C and the Python paths
            except Exception as e:  # the Python path does the same work
                self._say(f"C hot path unavailable: {e!r}")
                self._hp = None
        return self._hp

    def _mark(self, w: GuardedJit, kind: int, subset: tuple[int, ...] | None = None) -> None:
        """What a wrapper was seen to run, told to every wrapper of the same function and options:
        JAX shares compiled executables between `jax.jit` objects of one function, so a sibling's
        call may hit an executable this one compiled without any hook seeing it."""
        for v in tuple(self._by_key.get(w._key, ())) or (w,):
            was = v._kind
            v._kind, v._subset = _seen_also((v._kind, v._subset), kind, subset)
            if v._kind & _QUIET and v._kind & _CROSS and not (was & _QUIET and was & _CROSS):
                # Now runs both: programs exchanging nothing it cached on the C++ path would be
                # cache hits taken for cross-process work. Let JAX look them up again.
                compat.clear_jit_cache(v._jitted)
        # (and every later jit object of the function starts from it)
        self._kinds[w._key] = _seen_also(self._kinds.get(w._key, (_UNKNOWN, None)), kind, subset)

    def stream(self, subset: tuple[int, ...]) -> Recorder:
        """The dispatch stream of computations over exactly `subset` (created on first use)."""
        rec = self.streams.get(subset)
        if rec is None:
            with self._lock:
                rec = self.streams.get(subset)
                if rec is None:
                    rec = Recorder(self._stream_flight(subset), sites=self.recorder)  # one call-site table
                    self.streams = {**self.streams, subset: rec}  # readers iterate without the lock
                    if self.exchange is not None:
                        self.exchange.streams = self.streams
        return rec

    def _stream_flight(self, subset: tuple[int, ...]) -> Any:
        """A flight file for a subset's stream, beside the main one: the supervisor reads what a
        dead or stuck pipeline-stage member dispatched last there."""
        if self.flight is None or len(self.streams) >= _STREAM_FLIGHT_FILES:
            return None  # (3 MB each: a program that makes sub-meshes without end gets no more)
        try:
            from runtime_guard.flight import FlightRecorder

            fr = FlightRecorder(self.flight.path.parent, subset=subset)
            fr.set_process(self.process_index)
            return fr
        except Exception as e:  # an extra, as the main flight file is
            self._say(f"no flight recorder for the stream over {subset}: {e!r}")
            return None

    def fields_of(self, exact: int) -> dict[str, str]:
        return self.registry.fields.get(exact, {})

    def _on_execute(self, er: Any, args: tuple) -> None:
        """Python path (`ExecuteReplicated.__call__`): runs before the executable does."""
        if not self.active:
            return
        try:
            exact, multi, subset = self._exec_entry(er, args)
        except Exception as e:  # never let a signature problem stop the computation
            self._say(f"could not read executable signature: {e!r}")
            return
        if multi and subset is None and self.observer is not None:
            self.observer.saw(sys._getframe(1))
        call = _current_call()
        w = call[_WRAPPER] if call is not None else None
        if subset is not None:
            self._on_subset_execute(call, w, exact, subset)
            return
        if w is not None:
            self._mark(w, _MULTI if multi else _LOCAL if multi is False else _QUIET)
            if call[_SPRE]:  # recorded as over a subset, but this call runs elsewhere
                call[_STREAM].undo(call[_SPRE])
                call[_SPRE] = 0
        if w is not None and not self.strict:
            if not multi:
                if call[_PRE]:  # recorded as cross-process, but this call runs locally only
                    self.recorder.undo(call[_PRE])
                    call[_PRE] = 0
                call[_RECORDED] = True  # (seen: not a cache hit to judge by its arguments)
                return
            self.registry.exact(call[_KEY], exact, self.fields_of(exact))
            if call[_PRE]:
                self.recorder.set_exact(call[_PRE], exact)
                call[_PRE] = 0
            else:
                self.recorder.record(call[_KEY], exact, call[_CODE], call[_LINE])
            call[_RECORDED] = True
            return
        if not multi or (call is not None and w is None and call[_RECORDED]):
            return  # local only, or an AOT call already recorded before it ran
        if call is not None:
            code, line = call[_CODE], call[_LINE]
            call[_RECORDED] = True
        else:
            code, line = self.user_site(sys._getframe(1))
        seq = self.recorder.record(exact, exact, code, line)
        if self.strict:
            self._strict_wait(seq, exact)

    def _on_subset_execute(self, call: list | None, w: GuardedJit | None, exact: int, subset: tuple[int, ...]) -> None:
        """A computation over a subset of the processes that includes this one: recorded in that
        subset's stream; in strict mode its members then meet at a barrier of that stream."""
        stream = self.stream(subset)
        if w is not None:
            self._mark(w, _SUBSET, subset)
            if call[_PRE]:  # recorded as over every process: it is not
                self.recorder.undo(call[_PRE])
                call[_PRE] = 0
            key = call[_KEY]
            self.registry.exact(key, exact, self.fields_of(exact))
        elif call is not None and call[_RECORDED]:
            return  # an AOT call, already recorded before it ran
        else:
            key = exact
        if call is not None:
            code, line = call[_CODE], call[_LINE]
            call[_RECORDED] = True
        else:
            code, line = self.user_site(sys._getframe(2))
        if call is not None and call[_SPRE] and call[_STREAM] is stream:
            seq = call[_SPRE]
            stream.set_exact(seq, exact)
            call[_SPRE] = 0
        else:
            if call is not None and call[_SPRE]:
                call[_STREAM].undo(call[_SPRE])
                call[_SPRE] = 0
            seq = stream.record(key, exact, code, line)
        if self.strict:
            self._strict_wait(seq, exact, subset)

    def _on_compiled_call(self, compiled: Any, orig: Callable, args: tuple, kwargs: dict) -> Any:
        """AOT `Compiled.__call__`: the executable is known exactly, so record before it runs."""
        if not self.active or self.strict:
            return orig(compiled, *args, **kwargs)
        ex = compat.compiled_mesh_executable(compiled)
        if ex is None or not self._allow_fastpath_multi(ex):
            return orig(compiled, *args, **kwargs)
        exact, subset = self._compiled_exact(compiled, ex)
        code, line = self.user_site(sys._getframe(1))
        if subset is None and self.observer is not None:
            self.observer.saw(sys._getframe(1))
        if subset is None:
            seq = self.recorder.record(exact, exact, code, line)
            call = [None, code, line, seq, True, exact, 0, None]
        else:
            stream = self.stream(subset)
            call = [None, code, line, 0, True, exact, stream.record(exact, exact, code, line), stream]
        outer = getattr(_tl, "call", None)
        _tl.call = call  # the Python fallback path, if taken, must not record it again
        busy, seq = self._busy, call[_PRE] or call[_SPRE]
        tok = busy.enter(seq)
        try:
            return orig(compiled, *args, **kwargs)
        finally:
            _tl.call = outer
            busy.leave(tok, True, seq)

    def _allow_fastpath_multi(self, ex: Any) -> bool:
        """Is this executable cross-process work (see `_allow_fastpath`'s cache: None is over
        several processes but exchanging nothing)?"""
        if ex in self._me_multi:
            return bool(self._me_multi[ex])
        multi = compat.is_multiprocess_mesh_executable(ex)
        self._me_multi[ex] = multi if multi or not compat.spans_processes(ex) else None
        return multi

    _compiled_keys: "weakref.WeakKeyDictionary[Any, tuple[int, tuple[int, ...] | None]]"

    def _compiled_exact(self, compiled: Any, ex: Any) -> tuple[int, tuple[int, ...] | None]:
        """(exact signature, the subset of processes it runs over or None for all of them)."""
        cache = self.__dict__.setdefault("_compiled_keys", weakref.WeakKeyDictionary())
        entry = cache.get(ex)
        if entry is None:
            info = compat.exec_info_from_mesh_executable(ex, compat.compiled_name(compiled))
            exact = exec_key(info)
            entry = cache[ex] = (exact, self._scope(info.processes)[1])
            self.registry.name(exact, info.name)
            self.registry.exact(exact, exact, exec_fields(info))
        return entry

    def _on_replicated_data(self, api: str, data: Any, sharding: Any) -> None:
        """Host data declared replicated over every process (settings.check_replicated): its
        digest goes on record as a dispatch of its own, so processes that hold different values
        differ there, at the line that made the array."""
        if not self.active or self.exchange is None:
            return
        try:
            if len({d.process_index for d in sharding.device_set}) < self.num_processes:
                return  # over a subset of the processes: not checked
            digest = compat.host_data_digest(data)
            shape = f"{getattr(data, 'dtype', '?')}{list(getattr(data, 'shape', ()))}"
        except Exception:  # data that cannot be read as an array: JAX itself will say so
            return
        key = stable_hash("replicated", api, digest)
        name = f"{api}(replicated host data)"
        self.registry.name(key, name)
        self.registry.exact(key, key, {"name": name, "data": shape, "digest": digest})
        self.recorder.record(key, key, *self.user_site(sys._getframe(2)))

    def overlap(self) -> dict | None:
        """The first kept cross-process call that started while another thread's was in flight:
        {"seq", "with", "count"} (records of the main stream or a subset's), or None."""
        b = self._busy
        if not b.overlaps:
            return None
        return {"seq": int(b.overlap_seq), "with": int(b.overlap_with), "count": int(b.overlaps)}

    def _on_compile(self, started: bool) -> None:
        if self.exchange is not None:
            self.exchange.compiling += 1 if started else -1

    # -- recording -------------------------------------------------------------------------------

    def user_site(self, frame: Any) -> tuple[Any, int]:
        """(code, line) of the first frame at or above `frame` outside JAX and the guard: where the
        user dispatched the computation. Usually `frame` itself (one cached dict lookup)."""
        f = frame
        while f is not None:
            code = f.f_code
            ok = self._user_code.get(code)
            if ok is None:
                ok = self._user_code[code] = not any(s in code.co_filename for s in self.settings.skip_frames)
            if ok:
                return code, f.f_lineno
            f = f.f_back
        return None, 0

    def site_of_frame(self, frame: Any) -> tuple[int, int]:
        """(site id, line) of the user's call site at or above `frame`; cached for the hot path
        when `frame` itself is user code (its (code, instruction) then always means one line)."""
        code, line = self.user_site(frame)
        if code is None:
            return 0, 0  # no user frame: no call site
        site = self.recorder.site_of(code)
        if code is frame.f_code:
            if len(self._sites) > 1_000_000:  # generated code: call sites without end
                self._sites.clear()
            self._sites[(id(code) << 32) | frame.f_lasti] = (site, line)
        return site, line

    def record(self, key: int, exact: int, frame: Any) -> int:
        return self.recorder.record(key, exact, *self.user_site(frame))

    def _strict_wait(self, seq: int, exact: int, subset: tuple[int, ...] | None = None) -> None:
        ex = self.exchange
        if ex is None:
            return
        if ex.verdict is not None:
            raise DivergenceError(ex.verdict)
        sub = ",".join(map(str, subset)) if subset else ""
        ex.pending = (seq, exact, sub) if sub else (seq, exact)
        try:
            ex.kv.barrier(strict_barrier_id(seq, exact, sub), 24 * 3600.0, processes=list(subset) if subset else None)
        except KVError as e:
            if ex.verdict_event.wait(5.0) and ex.verdict is not None:
                raise DivergenceError(ex.verdict) from None
            self._say(f"strict check at dispatch #{seq} failed without a verdict ({e}); continuing unchecked")
        finally:
            ex.pending = None

    # -- verdicts and exit -----------------------------------------------------------------------

    def _on_verdict(self, report: dict) -> None:
        from runtime_guard.exchange import _atomic_json
        from runtime_guard.report import writer
        from runtime_guard.report.model import Report

        rep = Report.from_dict(report)
        s = self.settings
        supervised = bool(os.environ.get("MCJAX_SUPERVISED"))
        try:
            if s.state_dir:
                Path(s.state_dir).mkdir(parents=True, exist_ok=True)
                _atomic_json(Path(s.state_dir) / "verdict.json", report)
            if s.report_dir and not supervised:
                writer.write_report(rep, s.report_dir)
            if not supervised:
                writer.print_report(rep)
        except Exception as e:
            self._say(f"could not write the report: {e!r}")
        if rep.kind in ("hang", "missing", "snapshot") or self.strict:
            # Hangs: stacks are taken while the processes still run, then someone decides.
            # Strict: main threads raise DivergenceError before their next cross-process dispatch.
            return
        delay = 60.0 if supervised else 0.0 if s.on_detect == "exit" else None
        if delay is None:
            return
        # Supervised: the supervisor collects stacks and stops the group; leave on our own only if
        # it does not.
        ex = self.exchange
        wait = ex.wait_verdict_seen if ex is not None and not supervised else None
        try:
            threading.Thread(target=_exit_later, args=(delay, wait), daemon=True).start()
        except RuntimeError:
            # The interpreter is shutting down (the program was leaving when the verdict came;
            # Python 3.12+ starts no thread then): leave from this thread, unless the supervisor
            # is there to stop us.
            if not supervised:
                _exit_later(0.0, wait)

    def _exits_on(self, report: dict) -> bool:
        """Does this verdict make an unsupervised process exit with EXIT_DETECTED (see `_on_verdict`)?"""
        return (report.get("kind") not in ("hang", "missing", "snapshot") and not self.strict
                and not os.environ.get("MCJAX_SUPERVISED") and self.settings.on_detect == "exit")

    def mark_exit(self, code: int, error: BaseException | None) -> None:
        """The program is leaving (normally, by sys.exit, or by an exception): tell the others."""
        ex = self.exchange
        if ex is None or ex.status != "running":
            return
        info = _exit_point(code, error, self.program)
        failed = error is not None and not isinstance(error, SystemExit)
        ex.mark_exit("failed" if failed else "exited", info)
        if isinstance(ex.verdict, dict) and self._exits_on(ex.verdict):
            # A verdict that came while the program was ending (its final comparison): once its
            # report is out, exit from this thread, since the interpreter may finish before
            # `_on_verdict`'s thread runs.
            ex.verdict_handled.wait(10.0)
            _exit_later(0.0, ex.wait_verdict_seen)

    def _say(self, msg: str) -> None:
        if not self.settings.quiet:
            print(f"mcjax-guard: {msg}", file=sys.stderr)


def _seen_also(seen: tuple[int, tuple | None], kind: int, subset: tuple[int, ...] | None) -> tuple[int, tuple | None]:
    """What a wrapper has run (kind bits, subset or _SEVERAL), having also run `kind` over `subset`."""
    old_kind, old_subset = seen
    if subset is not None:
        old_subset = subset if old_subset in (None, subset) else _SEVERAL
    return old_kind | kind, old_subset


# Frames `_current_call` recognises: the fast path's (by its locals) and those that publish their
# call in thread state.
_SLOW_CODE = GuardedJit._call_slow.__code__
_AOT_CODE = Guard._on_compiled_call.__code__


class _Disagreement(RuntimeError):
    pass


def _exit_point(code: int, error: BaseException | None, program: str = "") -> dict:
    import linecache
    import traceback

    info: dict[str, Any] = {"code": code, "file": "", "line": 0, "function": "", "source": "", "error": ""}
    tb = getattr(error, "__traceback__", None)
    if tb is not None:
        frames = [f for f in traceback.extract_tb(tb) if "/runtime_guard/" not in f.filename and "<frozen" not in f.filename]
        if frames:
            f = frames[-1]
            info.update(file=f.filename, line=f.lineno or 0, function=f.name,
                        source=linecache.getline(f.filename, f.lineno or 0).strip())
    if error is not None and not isinstance(error, SystemExit):
        info["error"] = "".join(traceback.format_exception_only(type(error), error)).strip()
    elif isinstance(error, SystemExit):
        info["error"] = f"sys.exit({error.code!r})"
    if not info["file"]:
        f = program or getattr(sys.modules.get("__main__"), "__file__", "") or ""
        info.update(file=f, function="<module>", error=info["error"] or "reached the end of the program")
        try:
            with open(f) as fh:
                info["line"] = sum(1 for _ in fh)
        except OSError:
            pass
    return info


def _exit_later(delay: float, wait: Callable[[], None] | None = None) -> None:
    time.sleep(delay)
    if wait is not None:
        try:
            wait()  # (process 0: until the others saw the verdict, bounded)
        except Exception:
            pass
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(EXIT_DETECTED)


# -- public API ------------------------------------------------------------------------------------

_current: Guard | None = None


def install(settings: GuardSettings | None = None, **overrides: Any) -> Guard:
    """Install the guard in this process (idempotent). Call before `jax.distributed.initialize()`
    (or after: it then starts at once). Returns the Guard; `guard.disabled_reason` says why it is
    inactive if the installed JAX is not supported."""
    global _current
    if _current is not None:
        return _current
    s = settings or GuardSettings.from_env()
    if overrides:
        s = replace(s, **overrides)
    g = Guard(s)
    g.install()
    _current = g
    # A forked child is not a process of its parent's job, and a process leaving through
    # `os._exit` (multiprocessing's fork workers do) says so, as at a normal exit: without a
    # supervisor too, else the others take the silence for a death (a report, and the survivors
    # stopped with EXIT_DETECTED) and a fork's exit talks through its parent's client (a hang).
    from runtime_guard import workers

    workers.register_process_hooks()
    return g


def uninstall() -> None:
    global _current
    if _current is not None:
        _current.uninstall()
        _current = None


def current() -> Guard | None:
    return _current


class guarded:
    """Context manager: `with runtime_guard.guarded(mode="strict"): ...`."""

    def __init__(self, settings: GuardSettings | None = None, **overrides: Any) -> None:
        self._settings, self._overrides = settings, overrides

    def __enter__(self) -> Guard:
        return install(self._settings, **self._overrides)

    def __exit__(self, et: Any, ev: Any, tb: Any) -> None:
        g = current()
        if g is not None:
            g.mark_exit(0 if ev is None else 1, ev)
        uninstall()
