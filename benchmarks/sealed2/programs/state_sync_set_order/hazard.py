# Statistic states registered in a set are synchronized across processes in the set's iteration order
# Source: https://github.com/logix-project/logix/pull/68
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("proc",))
PER_PROCESS = NamedSharding(MESH, P("proc"))


@jax.jit
def _sum_over_processes(stacked):
    return jnp.sum(stacked, axis=0)


class LogState:
    """Per-process statistics (covariances, counters) reduced across processes before use."""

    def __init__(self):
        self._states: dict[str, np.ndarray] = {}
        self._synchronized = set()

    def register(self, name: str, shape: tuple[int, ...]) -> None:
        self._states[name] = np.zeros(shape, np.float32)
        self._synchronized.add(name)

    def update(self, name: str, value: np.ndarray) -> None:
        self._states[name] += value

    def synchronize(self) -> list[tuple[str, float]]:
        out = []
        for name in self._synchronized:
            local = self._states[name][None]
            stacked = jax.make_array_from_process_local_data(PER_PROCESS, local)
            total = _sum_over_processes(stacked)
            self._states[name] = np.asarray(jax.device_get(total.addressable_data(0)))
            out.append((name, round(float(self._states[name].sum()), 3)))
        return out


state = LogState()
state.register("covariance_state", (8, 8))
state.register("covariance_counter", (1,))
state.register("eigval_state", (8,))
state.register("eigvec_state", (8, 4))
state.register("grad_mean", (16,))
state.register("grad_count", (2,))

rng = np.random.default_rng(jax.process_index())
for _ in range(3):
    feats = rng.normal(size=(5, 8)).astype(np.float32)
    state.update("covariance_state", feats.T @ feats)
    state.update("covariance_counter", np.array([5.0], np.float32))
    state.update("eigval_state", feats.var(axis=0))
    state.update("eigvec_state", feats.T @ feats[:, :4])
    state.update("grad_mean", rng.normal(size=16).astype(np.float32))
    state.update("grad_count", np.ones(2, np.float32))

print("RESULT", sorted(state.synchronize()))
