"""Stable identities of dispatched computations and where they were called from.

Everything hashed here must be identical on every process running the same program: no file
paths, no line numbers, no `hash()` of strings (randomized per process by PYTHONHASHSEED).
"""

from __future__ import annotations

import hashlib
from types import CodeType
from typing import Any

from runtime_guard.compat import ExecInfo


def stable_hash(*parts: object) -> int:
    """63-bit hash of the parts' text, the same in every process."""
    h = hashlib.blake2b(digest_size=8)
    for p in parts:
        h.update(repr(p).encode())
        h.update(b"\x00")
    return int.from_bytes(h.digest(), "big") >> 1


def exec_key(info: ExecInfo) -> int:
    # The optimized program is deterministic on the CPU. On accelerators per-process autotuning can
    # choose different kernels (and so different optimized HLO) for the same computation, so there
    # the identity is the name, shapes, dtypes, shardings and process set; the program hash is
    # still reported as a field.
    program = info.program if info.platform == "cpu" else ""
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
    """(display name, stable identity) of a Python function: module, qualname and a hash of the
    bytecode (so two lambdas in one module differ, while paths and line numbers do not count)."""
    name = getattr(fun, "__qualname__", None) or getattr(fun, "__name__", None) or type(fun).__name__
    module = getattr(fun, "__module__", None) or ""
    code = getattr(fun, "__code__", None)
    code_id = _code_identity(code) if isinstance(code, CodeType) else ""
    return f"{module}.{name}" if module and module != "__main__" else str(name), f"{module}|{name}|{code_id}"


def _code_identity(code: CodeType) -> str:
    consts = tuple(_code_identity(c) if isinstance(c, CodeType) else repr(c) for c in code.co_consts)
    return hashlib.blake2b(code.co_code + repr((consts, code.co_names)).encode(), digest_size=8).hexdigest()
