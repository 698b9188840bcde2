# Variational Monte Carlo state: a host-side total-size reduction runs only when the per-shape
# expect_and_grad kernel is (re)built, and the connected-element shape differs per rank.
# Source: https://github.com/netket/netket/pull/655
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_SITES = 6
N_SAMPLES_PER_RANK = 4
N_ITER = 12
HOPPING = -0.5


def total_size(n_local: int) -> int:
    """Number of samples summed over all ranks (host reduction, like mpi4py Allreduce)."""
    return int(np.sum(multihost_utils.process_allgather(np.int32(n_local))))


def log_psi(params, x):
    return jnp.sum(jnp.tanh(x @ params["w"] + params["b"]), axis=-1)


class MCState:
    def __init__(self, seed: int):
        # Markov chains are independent on every rank, as in the MPI sampler.
        self.rng = np.random.default_rng(seed + 17 * jax.process_index())
        self.params = {"w": jnp.full((N_SITES, 3), 0.05, jnp.float32), "b": jnp.zeros((3,), jnp.float32)}
        self._kernels = {}

    def sample(self) -> np.ndarray:
        return self.rng.integers(0, 2, size=(N_SAMPLES_PER_RANK, N_SITES)).astype(np.float32) * 2 - 1

    def connected(self, x: np.ndarray):
        # hopping term: every domain wall gives one connected configuration; pad to the local max
        walls = [np.nonzero(row[:-1] != row[1:])[0] for row in x]
        n_conn = max(1, max(len(w) for w in walls))
        xp = np.repeat(x[:, None, :], n_conn, axis=1)
        mels = np.zeros((len(x), n_conn), np.float32)
        for s, w in enumerate(walls):
            for j, i in enumerate(w):
                xp[s, j, i], xp[s, j, i + 1] = x[s, i + 1], x[s, i]
                mels[s, j] = HOPPING
        return xp, mels

    def _expect_and_grad_kernel(self, n_conn: int):
        if n_conn not in self._kernels:
            n_total = total_size(N_SAMPLES_PER_RANK)

            @jax.jit
            def kernel(params, x, xp, mels):
                def energy(p):
                    e_loc = jnp.sum(mels * jnp.exp(log_psi(p, xp) - log_psi(p, x)[:, None]), axis=1)
                    return jnp.sum(e_loc) / n_total
                return jax.value_and_grad(energy)(params)

            self._kernels[n_conn] = kernel
        return self._kernels[n_conn]

    def expect_and_grad(self):
        x = self.sample()
        xp, mels = self.connected(x)
        kernel = self._expect_and_grad_kernel(xp.shape[1])
        e_part, g_part = kernel(self.params, jnp.asarray(x), jnp.asarray(xp), jnp.asarray(mels))
        e_all, g_all = multihost_utils.process_allgather((e_part, g_part))
        return float(np.sum(e_all)), jax.tree.map(lambda g: jnp.sum(g, axis=0), g_all)


state = MCState(seed=3)
energies = []
for it in range(N_ITER):
    energy, grad = state.expect_and_grad()
    state.params = jax.tree.map(lambda p, g: p - 0.1 * g, state.params, grad)
    energies.append(round(energy, 5))

print("RESULT energies", energies)
print("RESULT params", round(float(jnp.sum(state.params["w"])), 5))
