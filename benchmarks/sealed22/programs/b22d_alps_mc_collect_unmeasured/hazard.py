# An ALPS-style parallel Monte Carlo run (mcmpiadapter): every process runs its own Markov chain of
# a small Ising ring, accumulates observables, and at the end the accumulators are merged across
# processes (collect_results) so every process can report the same global estimates.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class MeanAccumulator:
    def __init__(self):
        self.total, self.total_sq, self._count = 0.0, 0.0, 0

    def __lshift__(self, value):
        self.total += value
        self.total_sq += value * value
        self._count += 1
        return self

    def count(self):
        return self._count

    def collective_merge(self):
        local = np.array([self.total, self.total_sq, float(self._count)], np.float64)
        merged = np.asarray(multihost_utils.process_allgather(local)).sum(0)
        return merged[0] / max(merged[2], 1.0), int(merged[2])


class IsingSim:
    def __init__(self, params, seed):
        self.L, self.beta = params["L"], params["beta"]
        self.rng = np.random.default_rng(seed)
        self.spins = np.ones(self.L, np.int64)
        self.measurements = {"Energy": MeanAccumulator(), "Magnetization": MeanAccumulator(),
                             "Domain wall pairs": MeanAccumulator()}
        self._energy = jax.jit(lambda s: -jnp.sum(s * jnp.roll(s, 1)) / s.shape[0])

    def update(self):
        for _ in range(self.L):
            i = self.rng.integers(self.L)
            dE = 2 * self.spins[i] * (self.spins[i - 1] + self.spins[(i + 1) % self.L])
            if dE <= 0 or self.rng.random() < np.exp(-self.beta * dE):
                self.spins[i] *= -1

    def measure(self):
        self.measurements["Energy"] << float(self._energy(jnp.asarray(self.spins, jnp.float32)))
        self.measurements["Magnetization"] << float(abs(self.spins.mean()))
        walls = int(np.sum(self.spins != np.roll(self.spins, 1)))
        if walls >= 8:
            self.measurements["Domain wall pairs"] << walls / 2

    def collect_results(self, names=None):
        names = sorted(self.measurements) if names is None else names
        results = {}
        for name in names:
            if self.measurements[name].count():
                results[name] = self.measurements[name].collective_merge()
        return results


def main():
    rank = jax.process_index()
    params = {"L": 16, "beta": 0.9, "sweeps": 200, "SEED": 42}
    sim = IsingSim(params, seed=params["SEED"] + rank)
    for _ in range(params["sweeps"]):
        sim.update()
        sim.measure()
    local = {k: v.count() for k, v in sim.measurements.items()}
    print(f"rank {rank}: local measurement counts {local}")
    results = sim.collect_results()
    for name in sorted(results):
        mean, count = results[name]
        print(f"RESULT {name} {mean:.5f} n={count}")
    done = np.asarray(multihost_utils.process_allgather(np.array([len(results)], np.int32)))
    print("RESULT observables_merged", done.ravel().tolist())


if __name__ == "__main__":
    main()
