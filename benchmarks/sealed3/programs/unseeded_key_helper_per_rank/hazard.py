# Variational state draws its PRNG key from a helper that falls back to an unseeded per-process seed
# Source: https://github.com/netket/netket/pull/1829
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("samples",))
REPLICATED = NamedSharding(MESH, P())
BY_SAMPLE = NamedSharding(MESH, P("samples"))


def random_seed() -> int:
    """A fresh seed for users who did not pass one."""
    return int(np.random.randint(0, 1 << 31))


def PRNGKey(seed=None):
    """Documented to give the same key on every process."""
    if seed is None:
        seed = random_seed()
    return jax.random.PRNGKey(seed)


@dataclass
class RBM:
    n_visible: int
    n_hidden: int

    def init(self, key):
        k1, k2 = jax.random.split(key)
        return {"W": 0.1 * jax.random.normal(k1, (self.n_visible, self.n_hidden)),
                "b": 0.1 * jax.random.normal(k2, (self.n_hidden,))}

    @staticmethod
    def log_psi(params, x):
        return jnp.sum(jnp.log(jnp.cosh(x @ params["W"] + params["b"])), axis=-1)


class MCState:
    def __init__(self, model, n_samples_per_rank, seed=None):
        self.model = model
        self.n_samples_per_rank = n_samples_per_rank
        key = PRNGKey(seed)
        local = jax.device_get(model.init(key))
        self.parameters = jax.tree.map(
            lambda a: jax.make_array_from_process_local_data(REPLICATED, np.asarray(a)), local)
        self._sampler_rng = np.random.default_rng(1234 + jax.process_index())

    def samples(self):
        x = self._sampler_rng.choice([-1.0, 1.0], size=(self.n_samples_per_rank, self.model.n_visible))
        return jax.make_array_from_process_local_data(BY_SAMPLE, x.astype(np.float32))


@jax.jit
def sgd_step(params, x):
    def loss(p):
        return jnp.mean(RBM.log_psi(p, x) ** 2)
    val, grads = jax.value_and_grad(loss)(params)
    return jax.tree.map(lambda p, g: p - 0.05 * g, params, grads), val


state = MCState(RBM(n_visible=6, n_hidden=4), n_samples_per_rank=8)
for it in range(3):
    state.parameters, loss = sgd_step(state.parameters, state.samples())
    print("RESULT loss", it, round(float(loss), 5))

w = np.asarray(state.parameters["W"].addressable_data(0))
print("RESULT weight_checksum", round(float(np.abs(w).sum()), 5))
