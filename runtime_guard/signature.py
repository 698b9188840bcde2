"""Stable identities of dispatched computations and where they were called from.

Everything hashed here must be identical on every process running the same program: no file
paths, no line numbers, no `hash()` of strings (randomized per process by PYTHONHASHSEED).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import hashlib
import sys
from collections.abc import Mapping
from types import CodeType, FunctionType, MethodType
from typing import Any

import numpy as np

from runtime_guard.compat import ExecInfo


def stable_hash(*parts: object) -> int:
    """63-bit hash of the parts' text, the same in every process."""
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\x00")
    return int.from_bytes(h.digest(), "big") >> 1


def exec_key(info: ExecInfo) -> int:
    # The traced program (before optimization) is the same on every process that traced the same
    # computation. Where only the optimized HLO is known (an executable that did not go through the
    # compiler hook), it counts on the CPU alone: on accelerators per-process autotuning can choose
    # different kernels, and so different optimized HLO, for one computation; it is still reported.
    program = info.program if info.traced or info.platform == "cpu" else ""
    return stable_hash("exec", info.name, program, info.in_avals, info.in_shardings, info.out_avals,
                       info.out_shardings, info.processes)


def exec_fields(info: ExecInfo) -> dict[str, str]:
    """The fields a report compares, field by field."""
    return {
        "name": info.name,
        "program": info.program,
        "in_shapes": ", ".join(info.in_avals) or "()",
        "in_shardings": ", ".join(info.in_shardings) or "()",
        "out_shapes": ", ".join(info.out_avals) or "()",
        "out_shardings": ", ".join(info.out_shardings) or "()",
        "processes": ",".join(str(p) for p in info.processes),
    }


def function_identity(fun: Any) -> tuple[str, str]:
    """(display name, stable identity) of a Python callable: module, qualname and a hash of the
    bytecode (so two lambdas in one module differ, while paths and line numbers do not count), and
    the code it is bound to: functions in its closure cells and defaults, a `functools.partial`'s
    function (so the wrappers a library's `jit` decorator makes tell their users' functions
    apart). Bound *data* (numbers, configs) is left out: a value that differs between processes
    without reaching the program (a per-host directory, a trace-time logging flag) must not
    count. What does reach the program is in its traced hash, compared where it compiles; two
    cached closures over different constants are therefore not told apart between compilations
    (see docs/guard.md, Limits)."""
    return _display_name(fun), _identity(fun, 3)


def _display_name(fun: Any) -> str:
    if isinstance(fun, functools.partial):
        return f"partial({_display_name(fun.func)})"
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None)
    if not isinstance(name, str):
        name = type(fun).__qualname__
    module = getattr(fun, "__module__", None) or ""
    return f"{module}.{name}" if module and module != "__main__" else name


def _identity(fun: Any, depth: int) -> str:
    if isinstance(fun, functools.partial):
        args = ",".join(_code_value(a, depth - 1) for a in fun.args)
        kw = ",".join(f"{k}={_code_value(v, depth - 1)}" for k, v in sorted(fun.keywords.items()))
        return f"partial({_identity(fun.func, depth - 1)};{args};{kw})"
    if isinstance(fun, MethodType):  # the instance counts by its type: its state is the caller's
        return f"method({type(fun.__self__).__qualname__};{_identity(fun.__func__, depth)})"
    if not isinstance(fun, FunctionType):
        call = getattr(type(fun), "__call__", None)
        if isinstance(call, FunctionType):  # a callable object (a model, a loss class)
            return f"callable({type(fun).__module__}.{type(fun).__qualname__};{_identity(call, depth)})"
        name = getattr(fun, "__qualname__", None) or type(fun).__qualname__
        return f"{getattr(fun, '__module__', '')}|{name}|"
    parts = [fun.__module__ or "", fun.__qualname__, _code_identity(fun.__code__)]
    if depth > 0:
        for v in fun.__defaults__ or ():
            parts.append(_code_value(v, depth - 1))
        for k, v in sorted((fun.__kwdefaults__ or {}).items()):
            parts.append(f"{k}={_code_value(v, depth - 1)}")
        for name, cell in zip(fun.__code__.co_freevars, fun.__closure__ or ()):
            try:
                parts.append(f"{name}={_code_value(cell.cell_contents, depth - 1)}")
            except ValueError:  # a cell not filled yet
                parts.append(f"{name}=<empty>")
    return "|".join(parts)


def _code_value(v: Any, depth: int) -> str:
    """A bound value's part in a function's identity: functions by their identity, data not at
    all (see `function_identity`)."""
    if isinstance(v, (FunctionType, MethodType, functools.partial)) and depth > 0:
        return _identity(v, depth - 1)
    return "·"


_NUMBERS = (bool, int, float, complex, type(None))


def value_identity(v: Any) -> str:
    """A static argument value's text for a call's identity, the same in every process (see
    `_value`)."""
    return _value(v, 3)


def _value(v: Any, depth: int) -> str:
    """Numbers, strings and enums by value; callables and classes by identity; tuples, lists, sets,
    mappings and dataclasses item by item; meshes, shardings and partition specs by what their
    equality compares; any other object by its type only, since its repr may hold a memory address
    (or a per-host value its equality ignores) that differs between processes."""
    if isinstance(v, np.generic) and v.ndim == 0 and isinstance(v.item(), (bool, int, float)):
        v = v.item()
    if isinstance(v, (bool, int, float)):
        # Values equal under `==` get one text, as JAX picks executables by equality of static
        # arguments (`True`, `1`, `1.0` and an IntEnum of 1 run the same program).
        f = float(v)
        return str(int(f)) if f.is_integer() and abs(f) < 2**63 else repr(f)
    if isinstance(v, _NUMBERS) or isinstance(v, enum.Enum):
        return repr(v)
    if isinstance(v, (str, bytes)):
        return repr(v) if len(v) <= 200 else f"{type(v).__name__}#{stable_hash(v)}"
    if isinstance(v, (tuple, list)) and depth > 0 and len(v) <= 32:
        return "(" + ",".join(_value(x, depth - 1) for x in v) + ")"
    if isinstance(v, (FunctionType, MethodType, functools.partial)) and depth > 0:
        return _identity(v, depth - 1)
    if isinstance(v, np.generic) or isinstance(v, np.dtype):
        return repr(v)
    if isinstance(v, type):  # a class compares by identity: `dtype=jnp.bfloat16`, a model class
        return f"class {v.__module__}.{v.__qualname__}"
    if isinstance(v, (frozenset, set)) and depth > 0 and len(v) <= 32:
        # Sorted texts: a set's iteration order follows PYTHONHASHSEED, its equality does not.
        return "{" + ",".join(sorted(_value(x, depth - 1) for x in v)) + "}"
    if isinstance(v, Mapping) and depth > 0 and len(v) <= 32:  # a FrozenDict of options
        return "{" + ",".join(sorted(f"{_value(k, depth - 1)}:{_value(x, depth - 1)}" for k, x in v.items())) + "}"
    if isinstance(v, _sharding_types()):
        return _sharding_value(v)
    if dataclasses.is_dataclass(v) and not isinstance(v, type) and depth > 0:  # a config as a static arg
        # The fields its equality compares, as JAX's cache of static arguments does.
        return f"{type(v).__qualname__}(" + ",".join(
            f"{f.name}={_value(getattr(v, f.name, None), depth - 1)}" for f in dataclasses.fields(v) if f.compare) + ")"
    t = type(v)
    return f"<{t.__module__}.{t.__qualname__}>"


_SHARDING_TYPES: tuple = ()


def _sharding_types() -> tuple:
    """(Mesh, Sharding, PartitionSpec), from `jax.sharding` once JAX is imported. This module must
    not import JAX itself: the guard's supervisor and bootstrap import it before the program does
    (importing JAX there first broke hang detection in a 4-process run)."""
    global _SHARDING_TYPES
    if not _SHARDING_TYPES:
        js = sys.modules.get("jax.sharding")
        if js is None:
            return ()  # no value can be a mesh yet
        _SHARDING_TYPES = (js.Mesh, js.Sharding, js.PartitionSpec)
    return _SHARDING_TYPES


def _sharding_value(v: Any) -> str:
    """A mesh, sharding or partition spec by what its equality compares: axes, device ids (the
    same numbering on every process), spec and memory kind."""
    mesh_type, _, spec_type = _sharding_types()
    if isinstance(v, spec_type):
        return "P(" + ",".join(_value(x, 2) for x in v) + ")"
    if isinstance(v, mesh_type):
        ids = tuple(int(d.id) for d in v.devices.flat)
        return f"Mesh({dict(v.shape)!r},{getattr(v, 'axis_types', None)!r},devices#{stable_hash(ids)})"
    spec, mesh = getattr(v, "spec", None), getattr(v, "mesh", None)
    if isinstance(mesh, mesh_type):
        inner = f"{_sharding_value(mesh)},{_value(spec, 3)}"
    else:
        inner = f"devices#{stable_hash(sorted(int(d.id) for d in v.device_set))}"
    return f"{type(v).__name__}({inner},{getattr(v, 'memory_kind', None)!r})"


def _code_identity(code: CodeType) -> str:
    consts = tuple(_code_identity(c) if isinstance(c, CodeType) else repr(c) for c in code.co_consts)
    return hashlib.blake2b(code.co_code + repr((consts, code.co_names)).encode(), digest_size=8).hexdigest()
