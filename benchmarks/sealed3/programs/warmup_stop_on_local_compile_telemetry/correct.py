# Calibration warm-ups stop only when no rank compiled (compile telemetry reduced over the world)
# Source: https://github.com/OpenPipe/ART/pull/843
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("cp",))
BY_RANK = NamedSharding(MESH, P("cp"))
CHUNK, MAX_ROWS, DIM = 16, 32, 4
CANDIDATES = {"depth_one": 1, "uniform_depth_2": 2, "automatic": 3}


class CompileTelemetry:
    """Counts XLA backend compiles in this process."""

    def __init__(self):
        self.backend_compiles = 0
        jax.monitoring.register_event_duration_secs_listener(self._on_event)

    def _on_event(self, event: str, duration: float, **kwargs) -> None:
        if event == "/jax/core/compile/backend_compile_duration":
            self.backend_compiles += 1


@jax.jit
def pack_local_state(rows):
    """Per-rank state for this rank's context-parallel shard (runs on the local device only)."""
    state = jnp.cumsum(rows, axis=0)
    return jnp.zeros((MAX_ROWS, DIM), rows.dtype).at[:rows.shape[0]].set(state)


@partial(jax.jit, static_argnames="depth")
def cp_forward(state, depth: int):
    h = state
    for _ in range(depth):  # state exchange between context-parallel ranks
        h = jnp.tanh(h + jnp.roll(h, 1, axis=0).sum(axis=0, keepdims=True))
    return jnp.sum(h)


def calibration_sample(step: int) -> np.ndarray:
    seq_len = [40, 44, 44, 44, 44][min(step, 4)]  # sequence lengths of the calibration prompts
    return np.linspace(0.0, 1.0, seq_len * DIM, dtype=np.float32).reshape(seq_len, DIM)


def forward(depth: int, step: int) -> float:
    seq = calibration_sample(step)
    rank = jax.process_index()
    local = seq[rank * CHUNK:] if rank == jax.process_count() - 1 else seq[rank * CHUNK:(rank + 1) * CHUNK]
    state = np.asarray(pack_local_state(local))[None]
    out = cp_forward(jax.make_array_from_process_local_data(BY_RANK, state), depth=depth)
    return float(out)


def cost_calibrate(telemetry: CompileTelemetry, max_warmups: int = 4) -> dict:
    forwards = {}
    for name, depth in CANDIDATES.items():
        runs = 0
        for step in range(max_warmups):
            before = telemetry.backend_compiles
            forward(depth, step)
            runs += 1
            compiled_here = np.int32(telemetry.backend_compiles != before)
            compiled = bool(np.asarray(multihost_utils.process_allgather(compiled_here)).max())
            if not compiled:
                break
        measured = forward(depth, max_warmups)
        forwards[name] = (runs, round(measured, 3))
    return forwards


print("RESULT calibration", cost_calibrate(CompileTelemetry()))
