"""One process of a 2-process job, started by one of the launchers here (not by mcjax-guard).

usage: worker.py INDEX PORT MODE. Both processes sum a global array twice (a cross-process
all-reduce). MODE "hazard": process 0 sums once more, alone (a one-sided collective; process 1
leaves). MODE "clean": the look-alike: only the printing is on process 0. MODE "steady": 15
steps a second apart, after writing its pid to $WORKER_READY_DIR/ready-INDEX (a test stops it).
"""

import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P


def run(index: int, port: int, mode: str) -> None:
    jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=2, process_id=index)
    mesh = jax.make_mesh((jax.device_count(),), ("x",))
    x = jax.make_array_from_process_local_data(NamedSharding(mesh, P("x")), np.ones((1,), np.float32))
    total = jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))
    result = total(x)
    if mode == "steady":
        with open(os.path.join(os.environ["WORKER_READY_DIR"], f"ready-{index}"), "w") as f:
            f.write(str(os.getpid()))
        for _ in range(15):
            result = total(x * result).block_until_ready()
            time.sleep(1)
    result = total(x * result)
    if index == 0:
        if mode == "hazard":
            result = total(x * result)  # process 1 never runs it: process 0 waits for it forever
        print("total", float(result), flush=True)
    jax.block_until_ready(result)


if __name__ == "__main__":
    run(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3])
