# NetKet parallel-tempering Metropolis sampler (JAX port): chains are split over processes, each
# process runs n_chains_per_rank chains, each chain with n_replicas temperatures.
# Source: https://github.com/netket/netket/issues/1763
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import dataclasses
import functools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_SITES = 6
MESH = jax.sharding.Mesh(np.array(jax.devices()), ("S",))


def log_psi(params, sigma):
    # a tiny Jastrow-like ansatz
    return 0.5 * jnp.einsum("...i,ij,...j->...", sigma, params, sigma)


@dataclasses.dataclass(frozen=True)
class MetropolisPtSampler:
    n_sites: int
    n_chains: int = 8            # total over all processes
    n_replicas: int = 4
    sweep_size: int = 6

    @property
    def n_chains_per_rank(self) -> int:
        return max(self.n_chains // jax.process_count(), 1)

    @property
    def n_batches(self) -> int:
        return self.n_chains_per_rank * self.n_replicas

    def init_state(self, seed):
        key = jax.random.fold_in(jax.random.PRNGKey(seed), jax.process_index())
        sigma = 2.0 * jax.random.bernoulli(key, 0.5, (self.n_batches, self.n_sites)) - 1.0
        beta = 1.0 - jnp.arange(self.n_replicas) / self.n_replicas
        beta = jnp.tile(beta, (self.n_chains_per_rank, 1))
        return {"sigma": sigma, "beta": beta, "key": key,
                "n_accepted": jnp.zeros(self.n_batches)}

    def sample_next(self, params, state):
        def loop_body(i, s):
            key, k1, k2 = jax.random.split(s["key"], 3)
            flip = jax.random.randint(k1, (self.n_batches,), 0, self.n_sites)
            proposal = s["sigma"].at[jnp.arange(self.n_batches), flip].multiply(-1.0)
            proposal_log_prob = 2.0 * log_psi(params, proposal)
            log_prob = 2.0 * log_psi(params, s["sigma"])
            accept = jnp.exp(s["beta"].reshape((-1,)) * (proposal_log_prob - log_prob))
            do_accept = jax.random.uniform(k2, (self.n_batches,)) < accept
            sigma = jnp.where(do_accept[:, None], proposal, s["sigma"])
            return {**s, "sigma": sigma, "key": key, "n_accepted": s["n_accepted"] + do_accept}

        return jax.lax.fori_loop(0, self.sweep_size, loop_body, state)

    @functools.partial(jax.jit, static_argnums=(0, 3))
    def sample(self, params, state, chain_length):
        def step(s, _):
            s = self.sample_next(params, s)
            # only the physical (beta = 1) replica of every chain is returned
            phys = s["sigma"].reshape(self.n_chains_per_rank, self.n_replicas, -1)[:, 0]
            return s, phys

        state, samples = jax.lax.scan(step, state, None, length=chain_length)
        return samples.reshape(-1, self.n_sites), state


class MCState:
    def __init__(self, sampler, n_samples_per_rank, seed=0):
        self.sampler = sampler
        self.chain_length = n_samples_per_rank // sampler.n_chains_per_rank
        self.params = jnp.eye(N_SITES) * 0.1 + 0.05
        self.sampler_state = sampler.init_state(seed)
        self._mean = jax.jit(lambda x: jnp.mean(x), out_shardings=NamedSharding(MESH, P()))

    def sample(self):
        local, self.sampler_state = self.sampler.sample(self.params, self.sampler_state,
                                                        self.chain_length)
        return jax.make_array_from_process_local_data(NamedSharding(MESH, P("S")),
                                                      np.asarray(local))

    def magnetization(self):
        samples = self.sample()
        return float(self._mean(jnp.abs(samples.sum(-1))))


def main():
    sa = MetropolisPtSampler(N_SITES, n_chains=8, n_replicas=4)
    vs = MCState(sa, n_samples_per_rank=32)
    for it in range(3):
        print(f"RESULT iter {it} |m| {vs.magnetization():.5f}")
    print(f"RESULT n_global_samples {vs.sample().shape[0]}")


if __name__ == "__main__":
    main()
