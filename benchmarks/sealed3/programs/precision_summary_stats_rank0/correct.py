# expect_to_precision computes its end-of-loop summary on every rank and prints it on rank 0 only
# Source: https://github.com/netket/netket/pull/2275
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import dataclasses
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

_is_rank0 = jax.process_index() == 0


@dataclasses.dataclass(frozen=True)
class StatsSummary:
    mean: float
    error_of_mean: float
    variance: float


@jax.jit
def _reduce_samples(x):
    n = x.shape[0]
    mean = jnp.mean(x)
    var = jnp.mean((x - mean) ** 2)
    return mean, jnp.sqrt(var / n), var


class Stats:
    """Local-energy samples held as one array sharded over all processes."""

    def __init__(self, samples: jax.Array):
        self.samples = samples

    def get_stats(self) -> StatsSummary:
        mean, err, var = _reduce_samples(self.samples)  # cross-process reduction
        return StatsSummary(float(mean), float(err), float(var))


def _summary_error_and_scale(stats: Stats) -> tuple[float, float]:
    s = stats.get_stats()
    return s.error_of_mean, abs(s.mean) + 1e-12


class MCState:
    def __init__(self, n_samples_per_rank: int, seed: int = 0):
        self.n_samples_per_rank = n_samples_per_rank
        self.sharding = NamedSharding(jax.sharding.Mesh(np.array(jax.devices()), ("data",)), P("data"))
        self._rng = np.random.default_rng(seed + 1000 * jax.process_index())  # per-chain sampler streams

    def expect(self, scale: float) -> Stats:
        local = (1.0 + scale * self._rng.normal(size=self.n_samples_per_rank)).astype(np.float32)
        return Stats(jax.make_array_from_process_local_data(self.sharding, local))

    def expect_to_precision(self, scale: float, atol: float, max_iter: int = 8, verbose: bool = True):
        stats_list = []
        for it in range(max_iter):
            stats = self.expect(scale)
            stats_list.append(stats)
            if stats.get_stats().error_of_mean < atol:
                break
            self.n_samples_per_rank *= 2
        # The reduction runs on every rank; only the progress write is gated to the master.
        err = max(_summary_error_and_scale(s)[0] for s in stats_list)
        if verbose and _is_rank0:
            sys.stderr.write(f"  [done] max error = {err:g}\n")
        return stats_list[-1]


def main():
    vstate = MCState(n_samples_per_rank=16)
    vstate.expect_to_precision(scale=0.5, atol=0.05)
    final = vstate.expect(scale=0.5).get_stats()
    print("RESULT", f"n_samples_per_rank={vstate.n_samples_per_rank}")
    print("RESULT", f"mean={final.mean:.5f} error={final.error_of_mean:.5f}")


if __name__ == "__main__":
    main()
