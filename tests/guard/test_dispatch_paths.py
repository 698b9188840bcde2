"""Every dispatch path is seen: for each, only process 0 runs one such computation between two
common steps, and the guard must name it, on process 0's line, as the divergence."""

from __future__ import annotations

import textwrap

import pytest

from runtime_guard.settings import EXIT_DETECTED

PROGRAM = textwrap.dedent('''
    import sys
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    jax.distributed.initialize()
    mesh = Mesh(np.array(jax.devices()), ("d",))
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("d")), np.ones((2, 3), np.float32))

    @jax.jit
    def total(a):
        return a.sum()

    def summed(v):  # (its body runs eagerly: the psum is where the collective is dispatched)
        return jax.lax.psum(v.sum(), "d")  # ODD shard_map

    def odd_one_out(kind):
        if kind == "eager":
            return (x * 3.0).max()  # ODD eager
        if kind == "shard_map":
            return jax.shard_map(summed, mesh=mesh, in_specs=P("d"), out_specs=P())(x)
        if kind == "pmap":
            return jax.pmap(lambda v: jax.lax.psum(v, "i"), axis_name="i")(np.ones((1, 3), np.float32))  # ODD pmap
        if kind == "aot":
            compiled = jax.jit(lambda a: (a * 2).sum()).lower(x).compile()
            return compiled(x)  # ODD aot
        if kind == "device_put":
            return jax.device_put(np.ones(4, np.float32), NamedSharding(mesh, P()))  # ODD device_put

    total(x).block_until_ready()
    if jax.process_index() == 0:
        jax.block_until_ready(odd_one_out(sys.argv[1]))
    total(x).block_until_ready()
    total(x).block_until_ready()
''')


@pytest.mark.parametrize("kind", ["eager", "shard_map", "pmap", "aot", "device_put"])
def test_each_dispatch_path_is_seen(kind, tmp_path, guard_run):
    script = tmp_path / "paths.py"
    script.write_text(PROGRAM)
    odd_line = next(i for i, line in enumerate(PROGRAM.splitlines(), 1) if line.endswith(f"# ODD {kind}"))
    run = guard_run(script, program_args=(kind,))
    assert run.code == EXIT_DETECTED, run.stderr[-4000:]
    assert run.report["kind"] == "divergence", run.report["summary"]
    loc = run.process(0)["location"]
    assert loc["file"].endswith("paths.py") and loc["line"] == odd_line, (loc, run.report["summary"])
    assert run.process(1)["dispatch"]["name"] == "jit(total)", run.process(1)
