"""The one place that touches JAX private internals.

Every other module of the guard talks to JAX through the functions here. `check()` runs at
start-up: it verifies the installed version is one we support and that every internal we hook
still exists with the shape we expect. If anything is missing the guard says so in one line and
the program runs unguarded (a guard failure never breaks the user's program).

Dispatch paths (see shared/notes/jax-runtime-facts.md): every computation runs through a C++
`PjitFunction`. On a cache hit with fast-path data the executable runs with no Python frame; on a
miss, or without fast-path data, `pxla.ExecuteReplicated.__call__` runs in Python. We observe:
  - user jit objects, through a thin Python wrapper returned by a patched `jax.jit` (keeps the
    C++ fast path; ~1 µs);
  - AOT `Compiled.__call__` (a Python method that calls the C++ fast path);
  - everything else that spans processes (eager ops on global arrays, jax-internal jits,
    multihost_utils, jit objects created before the guard was installed) by refusing fast-path
    data for multi-process executables outside a wrapper, so they run `ExecuteReplicated.__call__`.
"""

from __future__ import annotations

import hashlib
import re
import threading
from dataclasses import dataclass
from typing import Any, Callable

# Versions whose internals we have checked: 0.10 (the CI's CPU build), 0.11 (0.11.2 with CUDA
# on the GPU machine: the whole test suite on its CPU backend, the hot path on its GPU) and 0.12
# (0.12.0.1 CPU, what a fresh Python 3.12 install gets: the guard's tests). Others: hooks are
# attempted only if `check()` finds every internal; otherwise the guard is disabled with a
# message naming the version.
SUPPORTED = ((0, 10), (0, 11), (0, 12))


class CompatError(RuntimeError):
    """The installed JAX lacks an internal the guard needs."""


def jax_version() -> tuple[int, ...]:
    import jax

    return tuple(int(p) for p in re.findall(r"\d+", jax.__version__)[:3])


def check() -> str | None:
    """None when every hook can be installed; else a one-line reason."""
    try:
        import jax
        from jax._src import core, distributed, pjit, stages  # noqa: F401
        from jax._src.interpreters import pxla
    except Exception as e:  # pragma: no cover - depends on the installed JAX
        return f"cannot import JAX internals ({e!r})"
    v = jax_version()
    missing = []
    for owner, name in (
        (pjit, "_get_fastpath_data"),
        (pxla, "ExecuteReplicated"),
        (pxla, "MeshExecutable"),
        (stages, "Compiled"),
        (distributed, "global_state"),
        (core, "trace_state_clean"),
    ):
        if not hasattr(owner, name):
            missing.append(f"{owner.__name__}.{name}")
    er = getattr(pxla, "ExecuteReplicated", None)
    if er is not None:
        for slot in ("xla_executable", "name", "in_handler", "out_handler", "kept_var_idx"):
            if slot not in getattr(er, "__slots__", ()):
                missing.append(f"ExecuteReplicated.{slot}")
    # The patches replace module attributes: they only work where JAX looks them up at call time.
    from jax._src import api

    for owner, fn, name in (
        (pjit, "_cpp_pjit", "_get_fastpath_data"),
        (pjit, "_pjit_call_impl", "_get_fastpath_data"),
        (getattr(stages, "Compiled", None), "__call__", "create_cpp_call"),
        (api, "clean_up", "shutdown"),
    ):
        f = getattr(owner, fn, None)
        if f is None or not _looks_up(f, name):
            missing.append(f"{fn} -> {name}")
    if missing:
        return f"JAX {jax.__version__} is not supported: missing internals {', '.join(missing)}"
    if v[:2] not in SUPPORTED:
        return None if _env_flag("MCJAX_ALLOW_UNTESTED_JAX") else (
            f"JAX {jax.__version__} is not a tested version (tested: "
            f"{', '.join('%d.%d' % s for s in SUPPORTED)}); set MCJAX_ALLOW_UNTESTED_JAX=1 to try anyway"
        )
    return None


def _looks_up(fn: Any, name: str) -> bool:
    """Does `fn` (or a function nested in it) refer to the global/attribute `name`?"""
    import inspect
    import types

    stack = [inspect.unwrap(fn).__code__]
    while stack:
        c = stack.pop()
        if name in c.co_names:
            return True
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return False


def _env_flag(name: str) -> bool:
    import os

    return os.environ.get(name, "") not in ("", "0", "false", "no")


# ---------------------------------------------------------------------------------------------
# Distributed runtime


def distributed_client() -> Any | None:
    """The coordination-service client once `jax.distributed.initialize` has run, else None."""
    from jax._src import distributed

    return distributed.global_state.client


def distributed_ids() -> tuple[int, int] | None:
    """(process_id, num_processes) from the distributed runtime, or None before initialize."""
    from jax._src import distributed

    gs = distributed.global_state
    if gs.client is None:
        return None
    return int(gs.process_id), int(gs.num_processes)


def coordinator_address() -> str:
    from jax._src import distributed

    return str(getattr(distributed.global_state, "coordinator_address", "") or "")


def patch_initialize(after: Callable[[], None], fill_args: Callable[[dict], dict]) -> Callable[[], None]:
    """Wrap `jax.distributed.initialize` so the guard starts right after it and can supply
    num_processes/process_id in `-n` mode. Returns an undo function."""
    import jax
    import jax.distributed  # noqa: F401 - the public module whose attribute users call
    from jax._src import distributed

    orig = distributed.initialize

    def initialize(*args: Any, **kwargs: Any) -> Any:
        names = ("coordinator_address", "num_processes", "process_id")
        kwargs.update({n: a for n, a in zip(names, args)})
        args = args[len(names):]
        out = orig(*args, **fill_args(kwargs))
        after()
        return out

    initialize.__wrapped__ = orig  # type: ignore[attr-defined]
    initialize.__doc__ = orig.__doc__
    distributed.initialize = initialize
    jax.distributed.initialize = initialize

    def undo() -> None:
        distributed.initialize = orig
        jax.distributed.initialize = orig

    return undo


def patch_shutdown(before: Callable[[], None], after: Callable[[], None]) -> Callable[[], None]:
    """Run `before`/`after` around `jax.distributed.shutdown()` (JAX calls it at exit). Before: the
    program is leaving, tell the others. After: the guard's threads must be stopped, since a daemon
    thread still inside a coordination-service call when the interpreter finalizes aborts the
    process ("FATAL: exception not rethrown")."""
    from jax._src import distributed

    orig = distributed.shutdown

    def shutdown(*args: Any, **kwargs: Any) -> Any:
        try:
            before()
        except Exception:
            pass
        try:
            return orig(*args, **kwargs)
        finally:
            after()

    distributed.shutdown = shutdown

    def undo() -> None:
        distributed.shutdown = orig

    return undo


def coordination_service(address: str, num_processes: int) -> Any:
    """A standalone coordination service (what process 0 runs), for load benchmarks."""
    from jax._src.lib import _jax

    return _jax.get_distributed_runtime_service(address, num_processes, heartbeat_timeout=100, shutdown_timeout=30)


def coordination_client(address: str, process_id: int) -> Any:
    """A connected coordination-service client for task `process_id` (benchmarks)."""
    from jax._src.lib import _jax

    c = _jax.get_distributed_runtime_client(address, process_id, init_timeout=120, use_compression=True,
                                            heartbeat_timeout=100, shutdown_on_destruction=False)
    c.connect()
    return c


# ---------------------------------------------------------------------------------------------
# Executables and their signatures


@dataclass(frozen=True)
class ExecInfo:
    """What the guard needs to know about one loaded executable, read once."""

    name: str
    program: str  # hash of the program without source locations (stable across processes)
    in_avals: tuple[str, ...]
    in_shardings: tuple[str, ...]
    out_avals: tuple[str, ...]
    out_shardings: tuple[str, ...]
    processes: tuple[int, ...]
    platform: str = "cpu"
    traced: bool = False  # `program` hashes the traced program (else the optimized HLO)
    communicates: bool = True  # exchanges data between devices (see `executable_communicates`)

    @property
    def multiprocess(self) -> bool:
        return len(self.processes) > 1


def _sharding_text(s: Any) -> str:
    spec = getattr(s, "spec", None)
    mesh = getattr(s, "mesh", None)
    if spec is not None and mesh is not None:
        shape = getattr(mesh, "shape", None)
        axes = ",".join(f"{k}={v}" for k, v in dict(shape).items()) if shape is not None else "?"
        return f"{type(s).__name__}(mesh[{axes}], {spec})"
    return f"{type(s).__name__}({len(getattr(s, 'device_set', ()) or ())} devices)"


def _device_processes(shardings: Any) -> tuple[int, ...]:
    procs: set[int] = set()
    for s in shardings:
        for d in getattr(s, "device_set", ()) or ():
            procs.add(int(d.process_index))
    return tuple(sorted(procs))


def _aval_text(a: Any) -> str:
    shape = getattr(a, "shape", None)
    dtype = getattr(a, "dtype", None)
    if shape is None:
        return type(a).__name__
    return f"{dtype}[{','.join(str(d) for d in shape)}]"


# Hashes of the programs as traced (before XLA optimizes them), by executable, taken when they are
# compiled. Keyed by id() with the executable's fingerprint to check against: a `LoadedExecutable`
# takes no weak reference, and holding it would keep device memory alive.
_TRACED: dict[int, tuple[Any, str]] = {}
# Custom calls whose configuration is a serialized kernel (Mosaic TPU, Pallas Triton, jax-triton,
# Mosaic GPU): identified by name and shapes only.
_KERNEL_CALLS = (b"tpu_custom_call", b"__gpu$xla.gpu.triton", b"triton_kernel_call", b"triton_kernel_call_ffi",
                 b"mosaic_gpu", b"mosaic_gpu_v2")
_TRACED_MAX = 1 << 16
_TRACED_LOCK = threading.Lock()


def traced_program_hash(computation: Any) -> str | None:
    """Hash of an `ir.Module` about to be compiled, identical on every process tracing the same
    program: no source locations, and the pointers some custom calls carry blanked out (as JAX's
    own persistent-cache key does). Unlike the optimized HLO it does not depend on per-process
    autotuning, so it identifies the program on accelerators too. ~0.3 ms per 10k lines of IR."""
    try:
        import io

        from jax._src.lib.mlir import ir, passmanager

        with computation.context:
            m = computation.operation.clone()
            passmanager.PassManager.parse("builtin.module(strip-debuginfo)").run(m)
            out = io.BytesIO()
            m.write_bytecode(file=out)
            data = out.getvalue()
            if any(t in data for t in (b"CustomSPMDPartitioning", b"callback", *_KERNEL_CALLS)):
                # Python callbacks and custom partitioning may carry a process-local pointer in
                # `backend_config` (FFI callbacks carry an index, which is kept); kernels (Pallas,
                # Mosaic, Triton) carry their own serialized module, with source locations that
                # strip-debuginfo does not reach: a checkout at another path would differ.
                def blank(op: Any) -> Any:
                    target = op.attributes["call_target_name"] if "call_target_name" in op.attributes else None
                    if target is not None and op.name == "stablehlo.custom_call":
                        name = ir.StringAttr(target).value
                        kernel = name.encode() in _KERNEL_CALLS
                        if name == "CustomSPMDPartitioning" or name.endswith("callback") or kernel:
                            cfg = op.attributes["backend_config"] if "backend_config" in op.attributes else None
                            if isinstance(cfg, ir.StringAttr):
                                op.attributes["backend_config"] = ir.StringAttr.get("")
                        if kernel and "mhlo.backend_config" in op.attributes:
                            op.attributes["mhlo.backend_config"] = ir.DictAttr.get({})
                    return ir.WalkResult.ADVANCE

                m.operation.walk(blank)
                out = io.BytesIO()
                m.write_bytecode(file=out)
                data = out.getvalue()
    except Exception:
        return None
    return hashlib.blake2b(data, digest_size=8).hexdigest()


def remember_traced(xla_executable: Any, computation: Any) -> None:
    h = traced_program_hash(computation)
    if h is None:
        return
    with _TRACED_LOCK:
        if len(_TRACED) >= _TRACED_MAX:  # executables freed long ago; the newest are in use
            for k in list(_TRACED)[: _TRACED_MAX // 2]:
                del _TRACED[k]
        _TRACED[id(xla_executable)] = (_fingerprint(xla_executable), h)


def _fingerprint(xla_executable: Any) -> Any:
    try:
        return xla_executable.fingerprint
    except Exception:
        return None


def traced_program(xla_executable: Any) -> str | None:
    """The traced-program hash remembered for this executable, if it went through the compiler
    hook (AOT-deserialized executables do not)."""
    entry = _TRACED.get(id(xla_executable))
    if entry is None or entry[0] != _fingerprint(xla_executable):
        return None
    return entry[1]


def program_fingerprint(xla_executable: Any) -> str:
    """Hash of the optimized HLO printed without metadata: identical on every process running the
    same program, independent of file paths and line numbers (~100 µs, once per executable)."""
    try:
        from jax._src.lib import xla_client

        opts = xla_client.hlo.HloPrintOptions.fingerprint()
        text = "\n".join(m.to_string(opts) for m in xla_executable.hlo_modules())
    except Exception:
        try:
            text = xla_executable.get_hlo_text()
            text = re.sub(r", metadata=\{[^}]*\}", "", text)
        except Exception:
            return "unknown"
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


# Opcodes of the HLO instructions that exchange data between devices (their async `-start`
# halves included). A program over devices of several processes with none of them computes each
# process's shards alone: a process that does not run it keeps no one waiting.
_COLLECTIVE_OPS = re.compile(
    rb"\s(?:all-reduce|all-gather|all-to-all|ragged-all-to-all|collective-permute|collective-broadcast|"
    rb"reduce-scatter|send|recv)(?:-start)?\(")
_COMMUNICATES: dict[int, tuple[Any, bool]] = {}


def executable_communicates(xla_executable: Any) -> bool:
    """Does the compiled program exchange data between devices? Read once per executable from its
    optimized HLO (the SPMD partitioner inserts the collectives a sharding needs, so the traced
    program cannot tell). Kernels (Pallas, Mosaic, Triton) and unreadable programs count as
    communicating: they may move data themselves."""
    fp = _fingerprint(xla_executable)
    entry = _COMMUNICATES.get(id(xla_executable))
    if entry is not None and entry[0] == fp and fp is not None:
        return entry[1]
    try:
        from jax._src.lib import xla_client

        opts = xla_client.hlo.HloPrintOptions.fingerprint()  # no metadata: op names cannot match
        text = "\n".join(m.to_string(opts) for m in xla_executable.hlo_modules()).encode()
        comm = bool(_COLLECTIVE_OPS.search(text)) or any(k in text for k in _KERNEL_CALLS)
    except Exception:
        return True
    with _TRACED_LOCK:
        if len(_COMMUNICATES) >= _TRACED_MAX:
            _COMMUNICATES.clear()
        _COMMUNICATES[id(xla_executable)] = (fp, comm)
    return comm


def exec_info_from_replicated(er: Any, args: tuple) -> ExecInfo:
    """ExecInfo of an `ExecuteReplicated` about to run on `args` (flat, before DCE)."""
    kept = er.kept_var_idx
    traced = traced_program(er.xla_executable)
    in_avals = tuple(_aval_text(getattr(a, "aval", a)) for i, a in enumerate(args) if i in kept)
    in_sh = tuple(er.in_handler.in_shardings)
    out_sh = tuple(er.out_handler.out_shardings)
    return ExecInfo(
        name=str(er.name),
        program=traced or program_fingerprint(er.xla_executable),
        in_avals=in_avals,
        in_shardings=tuple(_sharding_text(s) for s in in_sh),
        out_avals=tuple(_aval_text(a) for a in er.out_handler.out_avals),
        out_shardings=tuple(_sharding_text(s) for s in out_sh),
        processes=_device_processes(in_sh + out_sh),
        platform=_platform(er.xla_executable),
        traced=traced is not None,
        communicates=executable_communicates(er.xla_executable),
    )


def _platform(xla_executable: Any) -> str:
    try:
        return str(xla_executable.local_devices()[0].platform)
    except Exception:
        return "unknown"


def exec_info_from_mesh_executable(ex: Any, name: str) -> ExecInfo:
    in_sh = tuple(ex._in_shardings)
    out_sh = tuple(ex._out_shardings)
    traced = traced_program(ex.xla_executable)
    return ExecInfo(
        name=name,
        program=traced or program_fingerprint(ex.xla_executable),
        in_avals=tuple(_aval_text(a) for a in ex.in_avals),
        in_shardings=tuple(_sharding_text(s) for s in in_sh),
        out_avals=tuple(_aval_text(a) for a in ex.out_avals),
        out_shardings=tuple(_sharding_text(s) for s in out_sh),
        processes=_device_processes(in_sh + out_sh),
        platform=_platform(ex.xla_executable),
        traced=traced is not None,
        communicates=executable_communicates(ex.xla_executable),
    )


def spans_processes(ex: Any) -> bool:
    """Are the devices of a `MeshExecutable` those of more than this process?"""
    try:
        return not all(s.is_fully_addressable for s in (*ex._in_shardings, *ex._out_shardings))
    except Exception:
        return False


def is_multiprocess_mesh_executable(ex: Any) -> bool:
    """Does this executable need other processes: devices of several processes, and data
    exchanged between devices (a replicated global array indexed on one process needs nobody)."""
    return spans_processes(ex) and executable_communicates(ex.xla_executable)


def args_processes(args: tuple, kwargs: dict) -> frozenset[int] | None:
    """The processes a call's arguments span: those of the first argument not fully addressable
    from this process, or None when every argument is local (or cannot be read). Per-call test,
    used for a jit wrapper that has not run yet (before its first call) or has run executables
    over different sets of processes."""
    import jax

    try:
        for leaf in jax.tree_util.tree_leaves((args, kwargs)):
            sh = getattr(leaf, "sharding", None)
            if sh is not None and not getattr(sh, "is_fully_addressable", True):
                return frozenset(d.process_index for d in sh.device_set)
    except Exception:  # a tracer or an exotic leaf whose sharding cannot be read: say nothing
        return None
    return None


def call_signature(key: int, args: tuple, kwargs: dict) -> int:
    """`key` combined with the shapes, dtypes and shardings of this call's arguments (exact mode)."""
    import jax

    from runtime_guard.signature import stable_hash

    leaves, treedef = jax.tree_util.tree_flatten((args, kwargs))
    parts = [str(treedef)]
    for leaf in leaves:
        aval = getattr(leaf, "aval", None)
        sh = getattr(leaf, "sharding", None)
        parts.append(f"{_aval_text(aval if aval is not None else leaf)}@{_sharding_text(sh) if sh is not None else ''}")
    return stable_hash(key, *parts)


_trace_clean: Callable[[], bool] | None = None
_disable_jit: Any = None


def in_trace_or_disabled_jit() -> bool:
    """Is a jit call right now being traced (inside another transformation) or run eagerly
    (`jax.disable_jit`)? Then it dispatches nothing of its own. Hot path: no imports here."""
    global _trace_clean, _disable_jit
    if _trace_clean is None:
        from jax._src import config, core

        _trace_clean, _disable_jit = core.trace_state_clean, config.disable_jit
    return (not _trace_clean()) or bool(_disable_jit.value)


_array_type: Any = None


def array_type() -> type:
    """The concrete `jax.Array` class (what a dispatched jit call returns)."""
    from jax._src.array import ArrayImpl

    return ArrayImpl


def concrete_result(out: Any) -> bool:
    """Is this jit call's result (or its first element) a concrete jax.Array, i.e. did the call
    dispatch rather than trace? Cheap for the common result shapes; False means "look closer"."""
    global _array_type
    if _array_type is None:
        from jax._src.array import ArrayImpl

        _array_type = ArrayImpl
    t = type(out)
    if t is tuple or t is list:
        # A train step returns (params, opt_state, loss): the first element is a dict, the last
        # an array. A traced call returns no concrete array anywhere, so any one will do.
        if not out:
            return False
        return type(out[-1]) is _array_type or type(out[0]) is _array_type
    if t is dict:
        if not out:
            return False
        out = next(iter(out.values()))
    return type(out) is _array_type


# Stable dtype codes for the argument-shape hash, keyed by id() with the dtype kept alive beside
# its code (the C hot path reads this dict too). A dtype's own hash mixes in strings, whose hashes
# differ between processes (PYTHONHASHSEED); a CRC of its name does not.
DTYPE_CODES: dict[int, tuple[Any, int]] = {}


def dtype_code(dt: Any) -> int:
    hit = DTYPE_CODES.get(id(dt))
    if hit is not None and hit[0] is dt:
        return hit[1]
    import zlib

    code = zlib.crc32(f"{getattr(dt, 'str', '')}|{getattr(dt, 'name', dt)}".encode())
    if len(DTYPE_CODES) >= 4096:  # dtypes made afresh on every call: do not grow without end
        DTYPE_CODES.clear()
    DTYPE_CODES[id(dt)] = (dt, code)
    return code


def make_arg_shapes() -> Callable[[tuple], int]:
    """A function: a call's positional arguments -> a hash of the shapes and dtypes of its array
    arguments, top level and one level into small dicts, tuples and lists (a `batch` dict), 0 when
    there are none. Hot path: catches a batch of a process-local size or dtype passed to a
    function whose executables for both are already cached (fast mode compares executables only
    where they compile). Ints only: shape tuples hash the same in every process, dtypes go
    through `dtype_code`. Built once JAX is imported, with the types bound in the closure; the C
    hot path (`_hotpath.c`, `shape_hash`) computes the same value."""
    import numpy as np
    from jax._src.array import ArrayImpl

    arr, nd, codes, code_of = ArrayImpl, np.ndarray, DTYPE_CODES, dtype_code

    def arg_shapes(args: tuple) -> int:
        h = 0
        for a in args:
            t = type(a)
            if t is arr:
                av = a.aval  # C++ attributes: half of `a.shape`'s cost
                dt = av.dtype
                c = codes.get(id(dt))
                h = (h * 1000003) ^ hash(av.shape) ^ (c[1] if c is not None and c[0] is dt else code_of(dt))
            elif t is nd:
                dt = a.dtype
                c = codes.get(id(dt))
                h = (h * 1000003) ^ hash(a.shape) ^ (c[1] if c is not None and c[0] is dt else code_of(dt))
            elif (t is dict or t is tuple or t is list) and len(a) <= 8:
                for b in (a.values() if t is dict else a):
                    tb = type(b)
                    if tb is arr:
                        av = b.aval
                        dt = av.dtype
                        c = codes.get(id(dt))
                        h = (h * 1000003) ^ hash(av.shape) ^ (c[1] if c is not None and c[0] is dt else code_of(dt))
                    elif tb is nd:
                        dt = b.dtype
                        c = codes.get(id(dt))
                        h = (h * 1000003) ^ hash(b.shape) ^ (c[1] if c is not None and c[0] is dt else code_of(dt))
        return h & 0xFFFFFFFFFFFFFFFF

    return arg_shapes


def clear_dispatch_caches() -> None:
    """Drop JAX's C++ dispatch caches, so executables cached with fast-path data before the
    guard was installed (or under another mode) are looked at again."""
    import jax

    jax.clear_caches()


# ---------------------------------------------------------------------------------------------
# Dispatch hooks


class DispatchHooks:
    """Installs and removes the patches. The guard supplies three callbacks:

    - `on_execute(er, args) -> None`: an `ExecuteReplicated` is about to run (Python path). May
      raise to stop a divergent collective before it starts (strict mode).
    - `allow_fastpath(mesh_executable) -> bool`: may the C++ fast path cache this executable?
    - `wrap(fn, kind) -> callable`: wrap a user-facing jit/compiled callable.
    """

    def __init__(self) -> None:
        self._undo: list[Callable[[], None]] = []
        self.installed = False
        self.execute_code: Any = None  # code of the frames running an executable (once installed)

    def install(
        self,
        on_execute: Callable[[Any, tuple], None],
        allow_fastpath: Callable[[Any], bool],
        on_compiled_call: Callable[[Any, Callable, tuple, dict], Any] | None,
        wrap_jit: Callable[[Any], Any] | None,
        on_compile: Callable[[bool], None] | None = None,
    ) -> None:
        import jax
        from jax._src import api, compiler, pjit, stages
        from jax._src.interpreters import pxla

        er_cls = pxla.ExecuteReplicated
        orig_call = er_cls.__call__

        def er_call(self: Any, *args: Any) -> Any:
            on_execute(self, args)
            return orig_call(self, *args)

        er_call.__wrapped__ = orig_call  # type: ignore[attr-defined]
        # A frame of this code is an executable being run: one above another means the inner
        # computation runs *inside* the outer's dispatch (JAX converting an argument), see
        # `Guard._on_execute`.
        self.execute_code = er_call.__code__
        er_cls.__call__ = er_call
        self._undo.append(lambda: setattr(er_cls, "__call__", orig_call))

        orig_fp = pjit._get_fastpath_data

        def get_fastpath_data(executable: Any, *a: Any, **k: Any) -> Any:
            data = orig_fp(executable, *a, **k)
            if data is not None and not allow_fastpath(executable):
                return None
            return data

        pjit._get_fastpath_data = get_fastpath_data
        self._undo.append(lambda: setattr(pjit, "_get_fastpath_data", orig_fp))

        # AOT: keep the C++ path only where the guard allows it for this executable.
        me_cls = pxla.MeshExecutable
        orig_ccc = me_cls.create_cpp_call

        def create_cpp_call(self: Any, params: Any) -> Any:
            return orig_ccc(self, params) if allow_fastpath(self) else None

        me_cls.create_cpp_call = create_cpp_call
        self._undo.append(lambda: setattr(me_cls, "create_cpp_call", orig_ccc))

        if on_compiled_call is not None:
            c_cls = stages.Compiled
            orig_ccall = c_cls.__call__

            def compiled_call(self: Any, *args: Any, **kwargs: Any) -> Any:
                return on_compiled_call(self, orig_ccall, args, kwargs)

            c_cls.__call__ = compiled_call
            self._undo.append(lambda: setattr(c_cls, "__call__", orig_ccall))

        if wrap_jit is not None:
            orig_jit = api.jit

            def jit(fun: Any = api.NotSpecified(), /, **kwargs: Any) -> Any:
                if isinstance(fun, api.NotSpecified):
                    return lambda f: jit(f, **kwargs)
                return wrap_jit(orig_jit(fun, **kwargs))

            jit.__wrapped__ = orig_jit  # type: ignore[attr-defined]
            jit.__doc__ = orig_jit.__doc__
            api.jit = jit
            jax.jit = jit
            self._undo.append(lambda: (setattr(api, "jit", orig_jit), setattr(jax, "jit", orig_jit)))

        if hasattr(compiler, "compile_or_get_cached"):
            orig_cc = compiler.compile_or_get_cached

            def compile_or_get_cached(*a: Any, **k: Any) -> Any:
                if on_compile is not None:
                    on_compile(True)
                try:
                    ex = orig_cc(*a, **k)
                    computation = a[1] if len(a) > 1 else k.get("computation")
                    if computation is not None:
                        remember_traced(ex, computation)
                    return ex
                finally:
                    if on_compile is not None:
                        on_compile(False)

            compiler.compile_or_get_cached = compile_or_get_cached  # pxla looks it up at call time
            self._undo.append(lambda: setattr(compiler, "compile_or_get_cached", orig_cc))
        self.installed = True

    def uninstall(self) -> None:
        while self._undo:
            try:
                self._undo.pop()()
            except Exception:
                pass
        self.installed = False


def patch_replicated_inputs(on_data: Callable[[str, Any, Any], None]) -> Callable[[], None]:
    """Call `on_data(api, data, sharding)` with the host data of every array made by
    `jax.make_array_from_process_local_data` or `jax.make_array_from_callback` with a sharding that
    replicates it over more than this process (for the callback: what it returns for this
    process's first device), before the array is made. Returns the undo."""
    import jax
    from jax._src import array

    def replicated(sharding: Any) -> bool:
        try:
            return bool(sharding.is_fully_replicated) and not sharding.is_fully_addressable
        except Exception:
            return False

    orig_local, orig_cb = array.make_array_from_process_local_data, array.make_array_from_callback

    def make_array_from_process_local_data(sharding: Any, local_data: Any, global_shape: Any = None) -> Any:
        if replicated(sharding):
            on_data("make_array_from_process_local_data", local_data, sharding)
        return orig_local(sharding, local_data, global_shape)

    def make_array_from_callback(shape: Any, sharding: Any, data_callback: Callable, dtype: Any = None) -> Any:
        if replicated(sharding):
            seen: list = []

            def callback(index: Any) -> Any:
                data = data_callback(index)
                if not seen:
                    seen.append(True)
                    on_data("make_array_from_callback", data, sharding)
                return data

            return orig_cb(shape, sharding, callback, dtype)
        return orig_cb(shape, sharding, data_callback, dtype)

    for fn, orig in ((make_array_from_process_local_data, orig_local), (make_array_from_callback, orig_cb)):
        fn.__wrapped__ = orig  # type: ignore[attr-defined]
        fn.__doc__ = orig.__doc__
    array.make_array_from_process_local_data = jax.make_array_from_process_local_data = make_array_from_process_local_data
    array.make_array_from_callback = jax.make_array_from_callback = make_array_from_callback

    def undo() -> None:
        array.make_array_from_process_local_data = jax.make_array_from_process_local_data = orig_local
        array.make_array_from_callback = jax.make_array_from_callback = orig_cb

    return undo


def host_data_digest(data: Any) -> str:
    """Digest of host data (dtype, shape and bytes): equal on every process holding equal data."""
    import numpy as np

    a = np.ascontiguousarray(np.asarray(data))
    h = hashlib.blake2b(f"{a.dtype.str}{a.shape}".encode(), digest_size=8)
    h.update(a.reshape(-1).view(np.uint8))
    return h.hexdigest()


def clear_jit_cache(jitted: Any) -> None:
    """Drop a jit object's C++ dispatch cache (its next calls take the Python path once)."""
    try:
        jitted.clear_cache()
    except Exception:
        pass


def compiled_mesh_executable(compiled: Any) -> Any:
    """The MeshExecutable behind a `jax.stages.Compiled`."""
    return getattr(compiled, "_executable", None)


def compiled_name(compiled: Any) -> str:
    ex = compiled_mesh_executable(compiled)
    name = getattr(getattr(ex, "unsafe_call", None), "name", None) if ex is not None else None
    return str(name or "compiled")


def jit_function(jitted: Any) -> Any:
    """The Python function under a jit object (for a stable identity), if any."""
    return getattr(jitted, "_fun", None) or getattr(jitted, "__wrapped__", None)


def jit_options_text(jitted: Any) -> str:
    """The options of a jit object that pick its programs, as text that is the same on every
    process: two jit objects of one function that differ only in `out_shardings` run different
    programs from the same arguments."""
    from runtime_guard.signature import value_identity

    info = getattr(jitted, "_jit_info", None)
    if info is None:
        return ""
    parts = []
    for k in ("static_argnums", "static_argnames", "donate_argnums", "donate_argnames", "keep_unused"):
        parts.append(f"{k}={getattr(info, k, None)!r}")
    for k in ("in_shardings_leaves", "out_shardings_leaves"):
        leaves = getattr(info, k, None)
        if leaves:  # shardings by what their equality compares (an unspecified one by its type)
            parts.append(f"{k}=" + ",".join(value_identity(x) for x in leaves))
    return ";".join(parts)


def jit_statics(jitted: Any) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
    """(static_argnums, static_argnames) of a jit object, None when it has none: static values
    pick the executable, so they are part of a call's identity."""
    info = getattr(jitted, "_jit_info", None)
    nums = tuple(getattr(info, "static_argnums", None) or ())
    names = tuple(getattr(info, "static_argnames", None) or ())
    return (nums, names) if nums or names else None


_local = threading.local()


def thread_state() -> threading.local:
    return _local
