# Halo exchange with pmap/ppermute on per-host arrays padded to the largest host's length (same shape everywhere)
# Source: https://github.com/jax-ml/jax/issues/11614
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import functools
import os

import jax
import jax.numpy as jnp
import numpy as np

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_GLOBAL = jax.device_count()
# Each device sends its block to the next device around the ring (across hosts).
RING = [(i, (i + 1) % N_GLOBAL) for i in range(N_GLOBAL)]


def local_segments() -> np.ndarray:
    """This host's segments of a 1-D domain; domain decomposition gives host i (i+1)*2 cells per device."""
    cells = 2 * (jax.process_index() + 1)
    start = sum(2 * (p + 1) for p in range(jax.process_index())) * jax.local_device_count()
    data = np.arange(start, start + cells * jax.local_device_count(), dtype=np.float32)
    return data.reshape(jax.local_device_count(), cells)


@functools.partial(jax.pmap, axis_name="ring")
def exchange(block):
    received = jax.lax.ppermute(block, axis_name="ring", perm=RING)
    return received, jax.lax.psum(jnp.sum(jnp.where(block >= 0, block, 0.0)), axis_name="ring")


def padded(segments: np.ndarray, width: int) -> np.ndarray:
    out = np.full((segments.shape[0], width), -1.0, np.float32)
    out[:, :segments.shape[1]] = segments
    return out


MAX_CELLS = 2 * jax.process_count()
segments = padded(local_segments(), MAX_CELLS)
received, total = exchange(segments)
neighbour_cells = int(np.count_nonzero(np.asarray(received) >= 0))
print("RESULT", "global-sum", float(total[0]))
print(f"process {jax.process_index()}: received {neighbour_cells} cells from its neighbour", flush=True)
