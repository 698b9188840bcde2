"""A small multi-process JAX program that hangs in one of three ways (for post-mortem tests).

    python hang_program.py SCENARIO ODD NUM_PROCESSES PROCESS_ID PORT   (explicit coordinator)
    mcjax-guard -n N python hang_program.py SCENARIO ODD                 (jax.distributed.initialize())

SCENARIO: branch  - process ODD runs an extra jitted all-reduce; the others go on to
                    multihost_utils.sync_global_devices
          sleep   - process ODD sleeps outside JAX; the others wait in a jitted all-reduce
          barrier - process ODD waits at a coordination-service barrier; the others wait in a
                    jitted all-reduce
          secret  - as sleep, in a function whose locals hold secrets (the --locals test)
          stall   - every process waits at a barrier of its own name (a hang, nobody behind)
Lines the tests look for are marked with `# POINT:<name>`. With $MCJAX_FALLBACK_DIR set, the
faulthandler fallback dumper is installed first, as mcjax-guard does in every guarded process.
Each process prints "reached <unix time>" once every process is connected, just before the hang.
"""

import os
import sys
import time

scenario, odd = sys.argv[1], int(sys.argv[2])
explicit = len(sys.argv) > 3
if explicit and os.environ.get("MCJAX_FALLBACK_DIR"):
    from runtime_guard.stacks.fallback import install_fallback_dumper

    install_fallback_dumper(os.path.join(os.environ["MCJAX_FALLBACK_DIR"], f"stacks-{sys.argv[4]}.txt"))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

if explicit:
    jax.distributed.initialize(f"127.0.0.1:{sys.argv[5]}", int(sys.argv[3]), int(sys.argv[4]))
else:
    jax.distributed.initialize()
n, me = jax.process_count(), jax.process_index()
mesh = jax.make_mesh((n,), ("x",))
x = multihost_utils.host_local_array_to_global_array(np.ones((1, 4), np.float32), mesh, P("x"))


@jax.jit
def total(a):
    return jnp.sum(a)


@jax.jit
def scaled_total(a):
    return jnp.sum(a * 2)


total(x).block_until_ready()  # warm up: every process is connected
print(f"reached {time.time():.3f}", flush=True)


def rank_zero_work():
    return scaled_total(x).block_until_ready()  # POINT:branch-odd


def wait_holding_secrets():
    api_token = "tok-s3cr3t-0001"  # noqa: F841 - read by the report's --locals test
    config = {"password": "hunter2-s3cr3t", "learning_rate": 0.1}  # noqa: F841
    steps_done = 41  # noqa: F841 - not a secret: shown as is
    time.sleep(600)  # POINT:secret-odd


if scenario == "branch":
    if me == odd:
        rank_zero_work()
    multihost_utils.sync_global_devices("after step")  # POINT:branch-others
elif scenario == "sleep":
    if me == odd:
        time.sleep(600)  # POINT:sleep-odd
    total(x).block_until_ready()  # POINT:sleep-others
elif scenario == "secret":
    if me == odd:
        wait_holding_secrets()
    total(x).block_until_ready()  # POINT:secret-others
elif scenario == "stall":
    # Every process waits at a barrier of its own name: none completes (a hang, nobody behind).
    client = jax._src.distributed.global_state.client
    client.wait_at_barrier(f"mcjax-stall-{me}", 600_000)  # POINT:stall
elif scenario == "barrier":
    if me == odd:
        client = jax._src.distributed.global_state.client
        client.wait_at_barrier("mcjax-test-barrier", 600_000)  # POINT:barrier-odd
    total(x).block_until_ready()  # POINT:barrier-others
else:
    raise SystemExit(f"unknown scenario {scenario}")
