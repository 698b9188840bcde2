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
