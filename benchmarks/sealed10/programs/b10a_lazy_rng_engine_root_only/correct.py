# Every process creates the distributed RNG engine (a seed broadcast) before the root-only parameter draw
# Source: https://github.com/netket/netket/pull/294
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_VISIBLE, N_HIDDEN, N_SAMPLES = 6, 4, 8


class DistributedRandomEngine:
    """One numpy generator per process; the per-process seeds are derived on process 0 and broadcast."""

    def __init__(self, base_seed):
        seeds = np.random.default_rng(base_seed).integers(0, 2**31 - 1, size=jax.process_count())
        seeds = multihost_utils.broadcast_one_to_all(np.asarray(seeds, np.int64))
        self.rng = np.random.default_rng(int(seeds[jax.process_index()]))


_ENGINE = None


def get_random_engine(base_seed=1234):
    global _ENGINE
    if _ENGINE is None:
        _ENGINE = DistributedRandomEngine(base_seed)  # collective: every process must get here
    return _ENGINE


class RBM:
    def __init__(self):
        self.params = None

    def init_random_params(self, sigma=0.1, seed=None):
        """Random parameters drawn on the root and broadcast, so all replicas start identical."""
        size = N_VISIBLE * N_HIDDEN + N_HIDDEN
        flat = np.zeros((size,), np.float32)
        engine = get_random_engine()  # created on every process, before the root-only branch
        if jax.process_index() == 0:
            rng = np.random.default_rng(seed) if seed is not None else engine.rng
            flat = (sigma * rng.standard_normal(size)).astype(np.float32)
        flat = multihost_utils.broadcast_one_to_all(flat)
        self.params = {"W": flat[:N_VISIBLE * N_HIDDEN].reshape(N_VISIBLE, N_HIDDEN),
                       "b": flat[N_VISIBLE * N_HIDDEN:]}


def log_psi(params, v):
    theta = v @ params["W"] + params["b"]
    return jnp.sum(jnp.log(jnp.cosh(theta)), axis=-1)


@jax.jit
def energy_gradient(params, samples):
    def loss(p):
        lp = log_psi(p, samples)
        e_loc = -jnp.sum(samples[:, :-1] * samples[:, 1:], axis=-1)
        return jnp.mean(jax.lax.stop_gradient(e_loc - jnp.mean(e_loc)) * lp), jnp.mean(e_loc)
    (_, energy), g = jax.value_and_grad(loss, has_aux=True)(params)
    return energy, g


def sample_chains(n):
    """Each process runs its own Markov chains from its own stream of the distributed engine."""
    rng = get_random_engine().rng
    return (2 * rng.integers(0, 2, size=(n, N_VISIBLE)) - 1).astype(np.float32)


def main():
    machine = RBM()
    machine.init_random_params()  # no seed given: the root falls back to the distributed engine
    mesh = jax.make_mesh((jax.device_count(),), ("chains",))
    rep, data = NamedSharding(mesh, P()), NamedSharding(mesh, P("chains"))
    params = jax.device_put(machine.params, rep)
    for it in range(3):
        local = sample_chains(N_SAMPLES // jax.process_count())
        samples = jax.make_array_from_process_local_data(data, local)
        energy, g = energy_gradient(params, samples)
        params = jax.tree_util.tree_map(lambda p, d: p - 0.05 * d, params, g)
        print(f"iter {it} energy {float(energy):.4f}")
    norm = float(jnp.sqrt(sum(jnp.sum(x ** 2) for x in jax.tree_util.tree_leaves(params))))
    print("RESULT iterations", 3)
    print("RESULT param_norm", round(norm, 5))


main()
