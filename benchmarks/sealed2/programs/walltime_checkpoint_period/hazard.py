# Time-period checkpointing: each process decides from its own elapsed wall time whether to checkpoint now
# Source: https://github.com/ComputationalRadiationPhysics/picongpu/pull/4042
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("cells",))
CELLS = NamedSharding(MESH, P("cells"))
CHECKPOINT_TIME_PERIOD_S = 0.25
NUM_STEPS = 24


class FieldSource:
    """Reads this host's part of the external field; host 1 owns the denser region (more particles)."""

    def __init__(self):
        self.particles = 2000 if jax.process_index() == 0 else 60000
        self.rng = np.random.default_rng(jax.process_index())

    def next(self) -> np.ndarray:
        positions = self.rng.uniform(size=(self.particles, 3))
        hist, _ = np.histogramdd(positions, bins=(4, 2, 1))
        return hist.reshape(4, 2).astype(np.float32) / self.particles


@jax.jit
def push(field, source):
    return 0.9 * field + 0.1 * jnp.tanh(source + field)


def write_checkpoint(step: int, field) -> float:
    host_copy = multihost_utils.process_allgather(field, tiled=True)  # every rank contributes its cells
    return float(np.sum(host_copy))


source = FieldSource()
field = jax.make_array_from_process_local_data(CELLS, np.zeros((4, 2), np.float32))
last_checkpoint = time.monotonic()
checkpoints = []
for step in range(NUM_STEPS):
    incoming = source.next()
    if time.monotonic() - last_checkpoint >= CHECKPOINT_TIME_PERIOD_S:
        checkpoints.append((step, round(write_checkpoint(step, field), 4)))
        last_checkpoint = time.monotonic()
    field = push(field, jax.make_array_from_process_local_data(CELLS, incoming))

print("RESULT", round(float(jnp.sum(field)), 4), len(checkpoints))
