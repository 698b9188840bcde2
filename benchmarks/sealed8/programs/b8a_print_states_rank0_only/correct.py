# Every process calls the state printer (it gathers from all of them); only rank 0 prints
# Source: https://github.com/ICHEC/QNLP/pull/5 (port of an MPI state-vector simulator bug to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class DistributedSimulator:
    """State vector of n qubits, its amplitudes split over the processes (as Intel-QS splits them over ranks)."""

    def __init__(self, num_qubits: int):
        self.num_qubits = num_qubits
        self.mesh = jax.make_mesh((jax.device_count(),), ("amp",), axis_types=(jax.sharding.AxisType.Auto,))
        self.sharding = NamedSharding(self.mesh, P("amp"))
        n_local = 2 ** num_qubits // jax.process_count()
        local = np.zeros(n_local, np.float32)
        if jax.process_index() == 0:
            local[0] = 1.0
        self.state = jax.make_array_from_process_local_data(self.sharding, local)
        self._rotate = jax.jit(self._rotate_impl, static_argnums=1)
        self._norm = jax.jit(lambda s: jnp.sum(s * s))

    @staticmethod
    def _rotate_impl(state, qubit, theta=0.3):
        n = state.shape[0]
        idx = jnp.arange(n)
        partner = state[idx ^ (1 << qubit)]
        bit = (idx >> qubit) & 1
        c, s = jnp.cos(theta), jnp.sin(theta)
        return jnp.where(bit == 0, c * state - s * partner, s * partner + c * state)

    def apply_ry(self, qubit: int):
        self.state = self._rotate(self.state, qubit)

    def print_states(self, tol: float = 1e-3):
        amps = multihost_utils.process_allgather(self.state, tiled=True)
        if jax.process_index() == 0:
            for i, a in enumerate(amps):
                if abs(a) > tol:
                    print(f"|{i:0{self.num_qubits}b}> {a:+.4f}")

    def norm(self) -> float:
        return float(self._norm(self.state))


def encode_sentence(sim: DistributedSimulator, rank: int):
    for q in range(sim.num_qubits):
        sim.apply_ry(q)
        sim.print_states()
    return sim.norm()


sim = DistributedSimulator(num_qubits=4)
norm = encode_sentence(sim, jax.process_index())
print("RESULT norm", round(norm, 4))
