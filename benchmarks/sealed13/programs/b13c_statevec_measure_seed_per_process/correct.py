# Distributed state-vector simulator takes process 0's default seed on every process, so all pick the same outcomes
# Source: https://github.com/QuEST-Kit/QuEST/issues/113
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_QUBITS = 4
ROUNDS = 12
MESH = jax.make_mesh((jax.device_count(),), ("amps",))
AMPS, REPL = NamedSharding(MESH, P("amps")), NamedSharding(MESH, P())


def default_seed_key():
    """getQuESTDefaultSeedKey: wall-clock time and process id."""
    return np.array([int(time.time()) % 100000, os.getpid()], np.int64)


class QuESTEnv:
    def __init__(self):
        self.seed_key = np.asarray(multihost_utils.broadcast_one_to_all(default_seed_key()))
        self.rng = np.random.default_rng(self.seed_key.tolist())


def _apply_hadamard(amps, qubit):
    amps = jax.sharding.reshard(amps, REPL)  # the gate pairs amplitudes across processes
    psi = amps.reshape((2,) * N_QUBITS)
    axis = N_QUBITS - 1 - qubit
    a0, a1 = jnp.take(psi, 0, axis=axis), jnp.take(psi, 1, axis=axis)
    out = jnp.stack([(a0 + a1), (a0 - a1)], axis=axis) / jnp.sqrt(2.0)
    return out.reshape(-1)


def _prob_zero(amps, qubit):
    idx = jnp.arange(amps.shape[0])
    return jnp.sum(jnp.where(((idx >> qubit) & 1) == 0, jnp.abs(amps) ** 2, 0.0))


def _collapse(amps, qubit, outcome, prob):
    idx = jnp.arange(amps.shape[0])
    keep = ((idx >> qubit) & 1) == outcome
    return jnp.where(keep, amps / jnp.sqrt(prob), 0.0)


hadamard = jax.jit(_apply_hadamard, static_argnums=1, out_shardings=AMPS)
prob_zero = jax.jit(_prob_zero, static_argnums=1, out_shardings=REPL)
collapse = jax.jit(_collapse, static_argnums=1, out_shardings=AMPS)


def measure(env, amps, qubit):
    p0 = float(prob_zero(amps, qubit))
    outcome = 0 if env.rng.random() < p0 else 1
    prob = p0 if outcome == 0 else 1.0 - p0
    return collapse(amps, qubit, np.int32(outcome), np.float32(prob)), outcome


def main():
    env = QuESTEnv()
    n_local = 2 ** N_QUBITS // jax.process_count()
    start = np.zeros(n_local, np.float32)
    if jax.process_index() == 0:
        start[0] = 1.0  # |0000>
    amps = jax.make_array_from_process_local_data(AMPS, start)
    for q in range(N_QUBITS):
        amps = hadamard(amps, q)
    outcomes = []
    for r in range(ROUNDS):
        q = r % N_QUBITS
        amps, bit = measure(env, amps, q)
        outcomes.append(bit)
        amps = hadamard(amps, q)
    norm = float(jax.jit(lambda a: jnp.sum(a * a), out_shardings=REPL)(amps))
    print("RESULT outcomes", "".join(map(str, outcomes)))
    print("RESULT norm", round(norm, 5))


main()
