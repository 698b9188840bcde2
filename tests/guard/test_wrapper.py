"""The guard's jit wrapper behaves like the jit object it stands in for, and records exactly the
calls that dispatch (one process, real JAX)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from runtime_guard import compat
from runtime_guard.guard import _MULTI, Guard, GuardedJit
from runtime_guard.settings import GuardSettings


def _guard() -> Guard:
    g = Guard(GuardSettings(quiet=True))
    g.active, g.num_processes = True, 1
    return g


def _cross_process(g: Guard, f) -> GuardedJit:
    w = GuardedJit(jax.jit(f), g)
    w(jnp.ones(3))
    w._kind = _MULTI  # record its calls as a cross-process computation's would be
    return w


def test_records_each_dispatch_with_the_callers_line():
    g = _guard()
    w = _cross_process(g, lambda a: a * 2)
    before = g.recorder.seq
    for _ in range(3):
        w(jnp.ones(3))  # the line the records must name
    recs = g.recorder.records(before + 1, g.recorder.seq)
    assert len(recs) == 3
    assert {r.key for r in recs} == {w._key ^ compat.make_arg_shapes()((jnp.ones(3),))}
    assert all(r.code.co_name == "test_records_each_dispatch_with_the_callers_line" for r in recs)
    assert recs[0].line == recs[1].line


def test_call_sites_in_one_function_keep_their_own_lines():
    # The hot path caches lines per (code, instruction), never per code alone.
    import inspect

    g = _guard()
    w = _cross_process(g, lambda a: a - 1)
    before = g.recorder.seq
    here = inspect.currentframe().f_lineno
    for i in range(4):
        w(jnp.ones(3))  # here + 2
        if i % 2:
            w(jnp.ones(3))  # here + 4
    lines = [r.line for r in g.recorder.records(before + 1, g.recorder.seq)]
    assert lines == [here + 2, here + 2, here + 4, here + 2, here + 2, here + 4]


def test_calls_traced_inside_another_jit_are_not_dispatches():
    g = _guard()
    inner = _cross_process(g, lambda a: a + 1)
    before = g.recorder.seq
    outer = jax.jit(lambda a: (inner(a) * 2, inner(a)))
    outer(jnp.ones(3))
    assert g.recorder.seq == before  # traced twice, dispatched never
    inner(jnp.ones(3))
    assert g.recorder.seq == before + 1


def test_wrapper_keeps_the_jit_interface():
    g = _guard()

    def f(a, scale=2.0):
        return a * scale

    w = GuardedJit(jax.jit(f, static_argnames="scale"), g)
    assert w(jnp.ones(2), scale=3.0).tolist() == [3.0, 3.0]
    assert "mul" in w.lower(jnp.ones(2)).as_text()
    assert w.eval_shape(jnp.ones((4, 2))).shape == (4, 2)
    assert w.__wrapped__ is f

    class Model:
        def __init__(self):
            self.k = 5.0

        step = GuardedJit(jax.jit(lambda self, a: a * 1.0, static_argnums=0), g)

    m = Model()
    assert m.step(jnp.ones(2)).tolist() == [1.0, 1.0]  # bound like a method


def test_python_path_hooks_find_the_fast_path_call():
    # A new shape takes JAX's Python path, whose hook must find the fast-path call on the stack
    # (it publishes no thread state): here it learns the executable runs on this process only,
    # takes the record back and marks the function as run both ways.
    from runtime_guard.guard import _LOCAL

    g = _guard()
    w = _cross_process(g, lambda a: a * 3)
    g.hooks.install(on_execute=g._on_execute, allow_fastpath=g._allow_fastpath,
                    on_compiled_call=g._on_compiled_call, wrap_jit=lambda j: j, on_compile=g._on_compile)
    try:
        before = g.recorder.seq
        w(jnp.ones(5))  # compiles: the Python path
        assert g.recorder.seq == before
        assert w._kind == _MULTI | _LOCAL
    finally:
        g.hooks.uninstall()


def test_tuple_results_traced_or_dispatched():
    # (params, loss)-shaped results: dispatched calls are recorded, traced ones taken back.
    g = _guard()
    step = _cross_process(g, lambda a: ({"w": a * 2}, a.sum()))
    before = g.recorder.seq
    jax.jit(lambda a: step(a)[1] + 1)(jnp.ones(3))  # traced inside another jit
    assert g.recorder.seq == before
    params, loss = step(jnp.ones(3))
    assert g.recorder.seq == before + 1 and float(loss) == 3.0


def test_argument_shapes_tell_cached_variants_apart():
    # Both shapes compiled (cached) on every process; a process-local batch size later picks the
    # other executable: the record's identity must differ, or fast mode would miss it.
    g = _guard()
    w = GuardedJit(jax.jit(lambda a, b: a.sum() + b["x"].sum()), g)
    w(jnp.ones(3), {"x": jnp.ones((4, 2))})
    w._kind = _MULTI
    w(jnp.ones(3), {"x": jnp.ones((8, 2))})
    before = g.recorder.seq
    w(jnp.ones(3), {"x": jnp.ones((4, 2))})
    w(jnp.ones(3), {"x": jnp.ones((8, 2))})
    w(jnp.ones(3), {"x": jnp.ones((4, 2))})
    a, b, c = g.recorder.records(before + 1, g.recorder.seq)
    assert a.key == c.key != b.key
    assert g.registry.names[a.key] == g.registry.names[b.key] == g.registry.names[w._key]


def test_keyword_arrays_tell_cached_variants_apart():
    g = _guard()
    w = GuardedJit(jax.jit(lambda a, batch: a.sum() + batch.sum()), g)
    w(jnp.ones(3), batch=jnp.ones((4, 2)))
    w._kind = _MULTI
    w(jnp.ones(3), batch=jnp.ones((8, 2)))
    before = g.recorder.seq
    for n in (4, 8, 4):
        w(jnp.ones(3), batch=jnp.ones((n, 2)))
    w(jnp.ones(3), jnp.ones((4, 2)))  # the same array by position is another call signature
    a, b, c, d = g.recorder.records(before + 1, g.recorder.seq)
    assert a.key == c.key != b.key
    assert d.key != a.key


def test_static_argument_values_tell_cached_variants_apart():
    """A static argument picks the executable: `step(x, train=is_chief)` runs another program on
    one process even though every array has the same shape."""
    import dataclasses
    import functools

    @dataclasses.dataclass(frozen=True)
    class Cfg:
        depth: int

    g = _guard()
    f = functools.partial(jax.jit, static_argnums=(1,), static_argnames=("train",))(
        lambda x, cfg, train=False: x * cfg.depth + (1 if train else 0))
    w = GuardedJit(f, g)
    for cfg in (Cfg(1), Cfg(2)):
        for train in (False, True):
            w(jnp.ones(3), cfg, train=train)
    w._kind = _MULTI
    before = g.recorder.seq
    calls = [(Cfg(1), False), (Cfg(1), True), (Cfg(2), False), (Cfg(1), False)]
    for cfg, train in calls:
        w(jnp.ones(3), cfg, train=train)
    keys = [r.key for r in g.recorder.records(before + 1, g.recorder.seq)]
    assert len(keys) == 4 and keys[0] == keys[3] and len(set(keys[:3])) == 3, keys


def _documented_step(x):
    """Doc of the step."""
    return x + 1


def test_wrapper_keeps_its_functions_doc_and_module():
    """help(), pickling by reference and frameworks that name things by module read a jitted
    function's `__doc__` and `__module__`: a wrapper must show its function's, while the class
    keeps its own (and still pickles by reference)."""
    import inspect
    import pickle

    w = GuardedJit(jax.jit(_documented_step), _guard())
    assert w.__doc__ == "Doc of the step." and inspect.getdoc(w) == "Doc of the step."
    assert w.__module__ == __name__ and w.__name__ == "_documented_step"
    assert GuardedJit.__module__ == "runtime_guard.guard" and GuardedJit.__doc__.startswith("Stands in")
    assert pickle.loads(pickle.dumps(GuardedJit)) is GuardedJit


def test_copies_are_guarded_jit_objects_too():
    # `copy.deepcopy(trainer)` of an object holding a jitted step works unguarded; guarded it
    # failed (a lock in the guard) and `copy.copy` recursed for ever.
    import copy

    g = _guard()
    w = _cross_process(g, lambda a: a * 3)

    class Trainer:
        def __init__(self):
            self.step = w

    for c in (copy.copy(w), copy.deepcopy(w), copy.deepcopy(Trainer()).step):
        assert type(c) is GuardedJit and c._guard is g and c._kind == _MULTI
        before = g.recorder.seq
        assert float(c(jnp.ones(2))[0]) == 3.0
        assert g.recorder.seq == before + 1  # a sibling of the original: recorded as it is


def test_pickling_fails_as_the_jit_objects_own_does():
    import pickle

    import pytest

    w = GuardedJit(jax.jit(lambda a: a), _guard())
    try:
        pickle.dumps(w._jitted)
    except Exception as e:
        with pytest.raises(type(e)):
            pickle.dumps(w)
    else:  # a JAX whose jit objects pickle: so do the wrappers, guarded again where one runs
        assert type(pickle.loads(pickle.dumps(w))) is type(w._jitted)  # no guard installed here


def test_a_copied_method_stays_bound():
    # A deep copy of a guarded method once lost its object: `copy.deepcopy(m.step)(a, b)` ran
    # `step(self=a, a=b)` and returned a wrong number.
    import copy

    g = _guard()

    class Model:
        step = GuardedJit(jax.jit(lambda self, a, b=0.0: a * 10 + b), g)

    jax.tree_util.register_pytree_node(Model, lambda m: ((), None), lambda aux, ch: Model())
    m = Model()
    a, b = jnp.ones(2), jnp.full(2, 3.0)
    for c in (copy.copy(m.step), copy.deepcopy(m.step)):
        assert c(a, b).tolist() == [13.0, 13.0]


def test_a_keyword_argument_named_self_reaches_the_function():
    g = _guard()
    w = _cross_process(g, lambda a, self=1.0: a * self)
    for _ in range(3):  # the Python path, then the C path where it is built
        assert w(jnp.ones(2), self=jnp.full(2, 2.0)).tolist() == [2.0, 2.0]


def test_a_call_with_no_python_caller_runs():
    # A wrapper as a thread's target or an atexit function has no Python frame above it.
    import _thread
    import threading

    g = _guard()
    w = _cross_process(g, lambda a: a + 1)
    done = threading.Event()
    out = []

    def target(a):
        try:
            out.append(w(a))
        finally:
            done.set()

    for f in (w, target):  # the wrapper itself as the target, then one that reports back
        before = g.recorder.seq
        _thread.start_new_thread(f, (jnp.ones(2),))
        if f is target:
            assert done.wait(30)
            assert out and out[0].tolist() == [2.0, 2.0]
        else:
            for _ in range(3000):
                if g.recorder.seq > before:
                    break
                __import__("time").sleep(0.01)
        assert g.recorder.seq == before + 1


def test_turning_the_guard_off_stops_the_hot_path():
    g = _guard()
    w = _cross_process(g, lambda a: a + 1)
    w(jnp.ones(3))
    w(jnp.ones(3))
    g.active = 0  # any false value
    before = g.recorder.seq
    w(jnp.ones(3))
    assert g.recorder.seq == before


def test_the_jit_object_lives_through_its_call_when_the_wrapper_drops_it():
    # JAX's C++ call still uses its object after the traced function returns; the wrapper's
    # field being reassigned meanwhile must not free it.
    import sys
    import weakref

    g = _guard()
    x = jnp.ones(3)
    swap = []
    seen = []

    def f(a):
        if swap:
            swap.clear()
            seen.append(sys.getrefcount(w._jitted))
            w._jitted = jax.jit(lambda a: a * 5)
            seen.append(ref() is not None)
        return a + 1

    def call(a):
        return w(a)  # one call site: cached after the first call, then on the C path where it is built

    w = _cross_process(g, f)
    for _ in range(2):
        call(x)
    ref = weakref.ref(w._jitted)
    jax.clear_caches()  # the next call traces f again, inside the jit object's own call
    swap.append(1)
    assert call(x).tolist() == [2.0, 2.0, 2.0]
    assert seen[1] is True, seen  # alive while its call runs


def test_an_unpickled_wrapper_keeps_its_identity(monkeypatch):
    # An unpickled (or copied) jit object lacks the attributes JAX's Python code set on the
    # original, from which the identity is read: it travels with the pickle instead.
    import copy

    from runtime_guard import guard as gmod

    g = _guard()
    monkeypatch.setattr(gmod, "_current", g)  # as if installed in this process
    w = GuardedJit(jax.jit(lambda a, n: a * n, static_argnums=1), g)
    other = GuardedJit(jax.jit(lambda a, n: a + n, static_argnums=1), g)
    fn, args = w.__reduce__()
    twin = fn(copy.copy(args[0]), *args[1:])  # a jit object as unpickling would give it
    assert type(twin) is GuardedJit and (twin._key, twin._statics) == (w._key, w._statics)
    assert twin._key != other._key and twin(jnp.ones(2), 3).tolist() == [3.0, 3.0]
