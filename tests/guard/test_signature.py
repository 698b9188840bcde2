"""Stable identities of jitted functions and static values: what fast mode compares between
cached calls. Identical in every process (no addresses, no string hashes); code counts, data a
function is bound to does not (the traced program speaks for it)."""

from __future__ import annotations

import enum
import functools

from runtime_guard.compat import ExecInfo
from runtime_guard.signature import exec_key, function_identity, value_identity
from tests.guard.conftest import outputs_under_hash_seeds


def make_step(scale, callee=None):
    def step(x):
        return (callee or abs)(x) * scale

    return step


def loss(x, weight=1.0, *, mode="train"):
    return x * weight


class Mode(enum.Enum):
    TRAIN = 1
    EVAL = 2


def ident(f):
    return function_identity(f)[1]


def test_bound_data_is_left_out_and_bound_code_counts():
    """Data a function is bound to may differ between processes without reaching the program (a
    per-host directory, a trace-time logging flag): it must not count (what reaches the program
    is in the traced program's hash, compared where it compiles)."""
    assert ident(make_step(0.1)) == ident(make_step(0.2))
    assert ident(make_step(1, Mode.TRAIN)) == ident(make_step(1, Mode.EVAL))

    def a(x):
        return x

    def b(x):
        return -x

    assert ident(make_step(1, a)) != ident(make_step(1, b))  # another callee is another program
    assert ident(make_step(1, a)) == ident(make_step(2, a))


def test_partials_count_their_function():
    assert ident(functools.partial(loss, weight=2.0)) == ident(functools.partial(loss, weight=3.0))
    assert ident(functools.partial(loss)) != ident(functools.partial(make_step(1)))
    assert function_identity(functools.partial(loss, weight=2.0))[0] == f"partial({__name__}.loss)"


def test_equal_static_values_get_one_text():
    """JAX picks an executable by the equality of static arguments: values equal under `==` must
    hash alike, or one process's `True` and another's `1` would look like different programs."""
    import dataclasses

    import numpy as np

    class Level(enum.IntEnum):
        ONE = 1

    assert len({value_identity(v) for v in (True, 1, 1.0, Level.ONE, np.int64(1), np.float32(1.0))}) == 1
    assert value_identity(0.5) != value_identity(1) and value_identity(False) == value_identity(0)

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        lr: float
        workdir: str = dataclasses.field(default="", compare=False)  # per host, not compared

    assert Cfg(0.1, "/a") == Cfg(0.1, "/b")
    assert value_identity(Cfg(0.1, "/a")) == value_identity(Cfg(0.1, "/b"))
    assert value_identity(Cfg(0.1)) != value_identity(Cfg(0.2))


def test_static_classes_sets_mappings_and_meshes_count_by_value():
    """Hashable static values JAX compares by equality (or identity, for classes): a dtype class
    chosen per process, a set of options, a FrozenDict, a mesh or sharding must tell programs apart
    where JAX would compile another one, and agree where it would not."""
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P, SingleDeviceSharding

    assert value_identity(jnp.bfloat16) != value_identity(jnp.float32) != value_identity(np.float32)
    assert value_identity(frozenset({"a", "b"})) == value_identity(frozenset({"b", "a"}))
    assert value_identity(frozenset({"a"})) != value_identity(frozenset({"a", "b"}))
    assert value_identity({"b": 2, "a": 1}) == value_identity({"a": 1, "b": 2}) != value_identity({"a": 2, "b": 1})
    devs = np.array(jax.devices())
    m1, m2 = Mesh(devs, ("data",)), Mesh(devs, ("data",))
    assert m1 == m2 and value_identity(m1) == value_identity(m2)
    assert value_identity(m1) != value_identity(Mesh(devs, ("model",)))
    assert value_identity(NamedSharding(m1, P("data"))) == value_identity(NamedSharding(m2, P("data")))
    assert value_identity(NamedSharding(m1, P("data"))) != value_identity(NamedSharding(m1, P()))
    assert value_identity(P("data", None)) != value_identity(P(None, "data"))
    assert value_identity(SingleDeviceSharding(jax.devices()[0])) == value_identity(SingleDeviceSharding(jax.devices()[0]))
    assert "0x" not in value_identity(m1) + value_identity(NamedSharding(m1, P("data")))


def test_static_sets_agree_across_hash_seeds():
    """A set's iteration order follows PYTHONHASHSEED: its text must not."""
    code = (
        "from runtime_guard.signature import value_identity as v\n"
        "print(v(frozenset(['w', 'b', 'kernel', 'bias', 'scale'])), v({'x': frozenset('abcdef')}))\n"
    )
    outs = outputs_under_hash_seeds(code, ("1", "2", "3"))
    assert len(outs) == 1, outs


def test_objects_count_by_type_only():
    """An object's repr may hold its address: only its type may enter an identity."""
    class Model:
        pass

    m1, m2 = Model(), Model()
    assert ident(make_step(m1)) == ident(make_step(m2))
    assert "0x" not in ident(make_step(m1))


def test_recursive_closures_end():
    def outer():
        def inner(x):
            return inner(x)

        return inner

    assert ident(outer()) == ident(outer())


def test_identity_is_the_same_in_every_process():
    code = (
        "import functools\n"
        "junk = [object() for _ in range(777)]  # other addresses\n"
        "from tests.guard.test_signature import make_step, loss, Mode\n"
        "from runtime_guard.signature import function_identity\n"
        "class Cfg: pass\n"
        "fs = [make_step(0.5, functools.partial(loss, weight=Cfg())), make_step(Mode.EVAL), "
        "functools.partial(loss, 3, mode='eval')]\n"
        "print([function_identity(f)[1] for f in fs])\n"
    )
    outs = outputs_under_hash_seeds(code)
    assert len(outs) == 1, outs


def test_exec_key_uses_the_traced_program_on_every_platform():
    def info(program, platform, traced):
        return ExecInfo(name="jit(f)", program=program, in_avals=("f32[2]",), in_shardings=("s",),
                        out_avals=("f32[2]",), out_shardings=("s",), processes=(0, 1), platform=platform,
                        traced=traced)

    # Optimized HLO off the CPU may differ per process (autotuning): not part of the key.
    assert exec_key(info("aaaa", "gpu", False)) == exec_key(info("bbbb", "gpu", False))
    # The traced program does not: part of the key everywhere.
    assert exec_key(info("aaaa", "gpu", True)) != exec_key(info("bbbb", "gpu", True))
    assert exec_key(info("aaaa", "cpu", False)) != exec_key(info("bbbb", "cpu", False))


def test_the_guard_imports_without_jax():
    """The supervisor and the bootstrap import the guard's modules before the program imports JAX;
    importing JAX there first (a top-level `from jax.sharding import ...` here) broke hang
    detection over a sub-mesh in a 4-process run (test_subsets: a member that never joins)."""
    import subprocess
    import sys

    code = ("import sys, runtime_guard.guard, runtime_guard.signature, runtime_guard.launcher, "
            "runtime_guard.compare; print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]", out.stdout
