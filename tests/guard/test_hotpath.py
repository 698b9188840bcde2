"""The C hot path (`runtime_guard._hotpath`) records exactly what the Python path records: the
same call-site, the same argument-shape hash, the same ring slot, for the same calls."""

from __future__ import annotations

import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from runtime_guard import guard as gmod
from runtime_guard import hotpath
from tests.guard.test_wrapper import _cross_process, _guard

CPYTHON_311 = sys.implementation.name == "cpython" and sys.version_info >= (3, 11)


def test_extension_is_built_where_it_can_be(monkeypatch):
    # The README's install (`pip install -e`) compiles it in place; a silent fallback to the Python
    # path would leave the C path untested.
    monkeypatch.delenv("MCJAX_PURE_PYTHON", raising=False)
    if not CPYTHON_311:
        pytest.skip("the extension needs CPython 3.11+")
    assert hotpath.available(), "runtime_guard._hotpath is not importable: install with `pip install -e .`"


needs_c = pytest.mark.skipif(not hotpath.available(), reason="C hot path not built, or MCJAX_PURE_PYTHON set")

ARGS = [
    lambda: (jnp.ones(3),),
    lambda: (jnp.ones((2, 3)), {"x": jnp.ones(4), "y": np.zeros((5, 1)), "n": 3}),
    lambda: ([jnp.ones(2), jnp.ones((7,))], (np.ones(3),)),
    lambda: (tuple(jnp.ones(i + 1) for i in range(9)),),  # more than 8: not looked into
    lambda: (jnp.ones((1, 2, 3)), 2.5, None, 7),
    lambda: (jnp.ones(3, jnp.int32), {"a": jnp.ones(2, jnp.bfloat16), "b": np.ones(2, np.float16)}, [np.ones(1, bool)]),
]


def _call(w, args):
    return w(*args)  # the call site both paths must name


@needs_c
@pytest.mark.parametrize("make_args", ARGS, ids=range(len(ARGS)))
def test_c_and_python_paths_record_the_same(make_args, monkeypatch):
    g = _guard()
    w = _cross_process(g, lambda *a: jnp.zeros(()) + 1.0)
    args = make_args()
    hot = w._hp
    assert hot is not None
    w._hp = None
    for _ in range(2):  # the Python path: caches the call site and names the variant
        _call(w, args)
    py = g.recorder.records(g.recorder.seq, g.recorder.seq)[0]
    w._hp = hot
    # From here the Python path would fail: only the C path can record.
    monkeypatch.setattr(gmod, "_arg_shapes", None)
    monkeypatch.setattr(g, "site_of_frame", None)
    seq = g.recorder.seq
    jax.block_until_ready(_call(w, args))
    (c,) = g.recorder.records(seq + 1, seq + 1)
    assert (c.key, c.code, c.line, c.exact) == (py.key, py.code, py.line, py.exact)
    assert c.seq == py.seq + 1 and g.recorder.settled == c.seq


@needs_c
def test_c_path_hands_new_call_sites_and_variants_to_python():
    g = _guard()
    w = _cross_process(g, lambda a: a + 1)
    seq = g.recorder.seq
    w(jnp.ones(3))     # a new call site: the Python path caches it
    w(jnp.ones(3))     # another new site
    w(jnp.ones((2, 2)))  # a new shape variant at a third site
    recs = g.recorder.records(seq + 1, g.recorder.seq)
    assert [r.seq for r in recs] == [seq + 1, seq + 2, seq + 3]
    assert len({r.line for r in recs}) == 3 and len({r.key for r in recs}) == 2
    assert all(k in g.registry.names for k in {r.key for r in recs})


@needs_c
def test_c_path_releases_the_lock_and_folds_the_hash(monkeypatch):
    from runtime_guard.recorder import fold

    g = _guard()
    w = _cross_process(g, lambda a: a + 1)
    x = jnp.ones(3)
    n = (1 << 14) + 5  # past one hot-path fold (every RING/4 records)
    start = g.recorder.seq
    h0 = g.recorder.h
    for _ in range(n):
        w(x)
    recs = g.recorder.records(start + 1, g.recorder.seq)
    assert len(recs) == n
    h = h0
    for r in recs:
        h = fold(h, r.key)
    assert g.recorder.h == h
    assert g.recorder.lock.acquire(timeout=1)  # not left held
    g.recorder.lock.release()


@needs_c
def test_c_path_waits_while_another_thread_holds_the_recorder_lock():
    """The C path writes without taking the lock only when nobody holds it: a thread inside the
    recorder's critical section (which may release the GIL there, as a fold does) is waited
    for, and the record it writes keeps its own number."""
    import threading

    g = _guard()
    w = _cross_process(g, lambda a: a + 1)
    x = jnp.ones(3)
    done = threading.Event()

    def call():
        _call(w, (x,))
        done.set()

    call()
    call()  # its call site and variant are cached: the next call takes the C path
    done.clear()
    rec = g.recorder
    with rec.lock:
        before = rec.seq
        t = threading.Thread(target=call)
        t.start()
        assert not done.wait(0.5), "the C path wrote a record while the recorder's lock was held"
        assert rec.seq == before
        rec.seq = before + 1  # this thread's own record, as the Python path writes one
        rec._pack(rec._buf, rec._offset(before + 1), before + 1, 12345, 0, 0, 0, 0, rec.now)
    assert done.wait(30)
    t.join(30)
    assert rec.seq == before + 2
    assert [r.key for r in rec.records(before + 1, before + 2)][0] == 12345
    assert rec.records(before + 2, before + 2)[0].key != 12345
    assert rec.lock.acquire(timeout=1)
    rec.lock.release()


@needs_c
def test_argument_shapes_of_the_same_aval_object_are_read_once_and_right():
    """Outputs of a cached jit share one aval object, whose shape and dtype the C path keeps:
    arrays of another shape or dtype, alternating with them, still get their own variant."""
    from runtime_guard import compat

    shapes = compat.make_arg_shapes()
    g = _guard()
    w = _cross_process(g, lambda a: a * 2)
    xs = [jnp.ones(3), jnp.ones((2, 3)), jnp.ones(3, jnp.int32), w(jnp.ones(3)), w(jnp.ones(3))]
    for a in xs:
        _call(w, (a,))  # the Python path learns each variant
    for _ in range(3):
        for a in xs:
            start = g.recorder.seq
            _call(w, (a,))
            assert g.recorder.records(start + 1, start + 1)[0].key == w._key ^ shapes((a,))


def test_dtypes_tell_cached_variants_apart():
    """Same shapes, another dtype: another identity, on both paths (a process that reads its
    batch in half precision picks another cached executable)."""
    from runtime_guard import compat

    shapes = compat.make_arg_shapes()
    f32, f16 = jnp.ones((2, 4), jnp.float32), jnp.ones((2, 4), jnp.float16)
    assert shapes((f32,)) != shapes((f16,))
    assert shapes(({"x": f32},)) != shapes(({"x": f16},))
    assert shapes((np.ones(3, np.int32),)) != shapes((np.ones(3, np.int64),))
    # Stable across processes: the code comes from the dtype's name, not from hash().
    assert compat.dtype_code(np.dtype(np.float32)) == __import__("zlib").crc32(b"<f4|float32")


@needs_c
def test_threads_dispatching_through_the_c_path_keep_one_consistent_stream(monkeypatch):
    """Several threads calling guarded functions at once through the C path: every record gets
    its own number, in its own slot, and the rolling hash folds them in that order."""
    from runtime_guard.recorder import fold
    from tests.guard.test_recorder import run_threads_switching_often

    g = _guard()
    ws = [_cross_process(g, f) for f in (lambda a: a + 1, lambda a: a * 2, lambda a: a - 3, lambda a: a / 4)]
    x = jnp.ones(3)
    for w in ws:  # cache each thread's call site and variant (the Python path does that)
        w(x)

    def work(w, n=400):
        for _ in range(n):
            _call(w, (x,))

    for w in ws:
        _call(w, (x,))
    monkeypatch.setattr(gmod, "_arg_shapes", None)  # from here only the C path can record
    start = g.recorder.seq
    run_threads_switching_often([lambda w=w: work(w) for w in ws])
    recs = g.recorder.records(start + 1, g.recorder.seq)
    assert [r.seq for r in recs] == list(range(start + 1, start + 1 + 4 * 400))
    assert sorted(sum(1 for r in recs if r.key == k) for k in {r.key for r in recs}) == [400] * 4
    h = g.recorder.records(start, start)[0].h
    for r in recs:
        h = fold(h, r.key)
        assert r.h == h


def _probe():
    return gmod._current_call()  # as the hooks on JAX's Python path call it


@needs_c
def test_hooks_find_the_call_in_progress_on_the_c_path(monkeypatch):
    """The C base runs a hot call without a Python frame of its own; the hooks on JAX's Python
    path (a cache miss inside a hot call) still find that call, by its caller's frame, as they
    find the Python path's by its locals: same wrapper, site, line, sequence number and key."""
    g = _guard()
    result = jnp.ones(3)
    seen = []
    inner = gmod.GuardedJit(lambda a: (seen.append(("inner", _probe())), result)[1], g)
    outer = gmod.GuardedJit(lambda a: (seen.append(("outer", _probe())), inner(a), seen.append(("after", _probe())),
                                       result)[3], g)
    for w in (inner, outer):
        w._kind = gmod._MULTI
    for _ in range(3):  # first the Python path caches the call sites and variants, then C records
        seen.clear()
        _call(outer, (result,))
    monkeypatch.setattr(gmod, "_arg_shapes", None)  # from here only the C path can record
    seen.clear()
    seq = g.recorder.seq
    _call(outer, (result,))
    recs = g.recorder.records(seq + 1, g.recorder.seq)
    assert [r.key for r in recs] == [outer._key ^ _shape_of(result), inner._key ^ _shape_of(result)]
    (_, o), (_, i), (_, a) = seen
    assert [seen[k][0] for k in range(3)] == ["outer", "inner", "after"]
    assert o[0] is outer and i[0] is inner and a[0] is outer  # the innermost call in progress
    assert (o[3], o[5], i[3], i[5]) == (recs[0].seq, recs[0].key, recs[1].seq, recs[1].key)
    assert (o[1], o[2]) == (recs[0].code, recs[0].line) and o[1].co_name == "_call"
    assert i[1].co_name == "<lambda>"  # called from the outer function's body
    assert hotpath.current_function()() is None and _probe() is None  # nothing left in progress


@needs_c
def test_a_call_that_raises_leaves_nothing_in_progress(monkeypatch):
    g = _guard()
    x = jnp.ones(3)

    def boom(a):
        if len(calls) > 2:
            raise ValueError("inside JAX")
        calls.append(1)
        return x

    calls = []
    w = gmod.GuardedJit(boom, g)
    w._kind = gmod._MULTI
    _call(w, (x,))
    _call(w, (x,))
    monkeypatch.setattr(gmod, "_arg_shapes", None)
    _call(w, (x,))
    seq = g.recorder.seq
    with pytest.raises(ValueError, match="inside JAX"):
        _call(w, (x,))
    assert g.recorder.seq == seq + 1  # recorded before it ran, as a hang or crash must be
    assert hotpath.current_function()() is None


def _shape_of(a):
    from runtime_guard import compat

    return compat.make_arg_shapes()((a,))


@needs_c
@pytest.mark.parametrize("shape", ["tuple", "list", "dict", "scalar"])
def test_c_path_settles_train_step_results_and_undoes_traced_calls(shape, monkeypatch):
    """A train step returns (params, opt_state, loss): settled in C like a bare array; the same
    call traced inside another jit is taken back."""
    g = _guard()
    make = {"tuple": lambda a: ({"w": a}, a), "list": lambda a: [{"w": a}, a], "dict": lambda a: {"w": a, "n": 1},
            "scalar": lambda a: a.sum()}[shape]
    w = _cross_process(g, make)
    x = jnp.ones(3)
    for _ in range(2):
        _call(w, (x,))
    monkeypatch.setattr(gmod, "_arg_shapes", None)  # only the C path can record
    seq = g.recorder.seq
    _call(w, (x,))
    assert g.recorder.seq == seq + 1 and g.recorder.settled == seq + 1
    jax.jit(lambda a: _call(w, (a,)))(jnp.ones(4))  # the wrapper traced: a tracer comes back
    assert g.recorder.seq == seq + 1
