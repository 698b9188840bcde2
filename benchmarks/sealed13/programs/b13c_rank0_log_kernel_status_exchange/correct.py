# Microcircuit setup reads the RNG seed and VP count on every rank (status reads exchange delay extrema); rank 0 logs
# Source: https://github.com/nest/nest-simulator/issues/2741
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SIM = {"rng_seed": 55, "local_num_threads": 1, "n_per_rank": 16, "steps": 20, "resolution": 0.1}


class Kernel:
    """A NEST-like kernel: status reads update the delay extrema, which needs an MPI exchange."""

    def __init__(self):
        self._status = {"rng_seed": 1, "local_num_threads": 1}
        self._local_delays = np.array([1.5], np.float64)
        self.min_delay = self.max_delay = 1.5

    def set(self, **params):
        self._status.update(params)

    def add_delays(self, delays):
        self._local_delays = np.concatenate([self._local_delays, delays])

    def _update_delay_extrema(self):
        ext = multihost_utils.process_allgather(np.array([self._local_delays.min(), -self._local_delays.max()]))
        self.min_delay, self.max_delay = float(ext[:, 0].min()), float(-ext[:, 1].min())

    def get_kernel_status(self):
        self._update_delay_extrema()
        return {**self._status, "min_delay": self.min_delay, "max_delay": self.max_delay,
                "total_num_virtual_procs": jax.process_count() * self._status["local_num_threads"]}

    @property
    def rng_seed(self):
        return self.get_kernel_status()["rng_seed"]

    @property
    def total_num_virtual_procs(self):
        return self.get_kernel_status()["total_num_virtual_procs"]


kernel = Kernel()


class Network:
    def setup_nest(self):
        kernel.set(rng_seed=SIM["rng_seed"], local_num_threads=SIM["local_num_threads"])
        rng_seed = kernel.rng_seed
        total_num_virtual_procs = kernel.total_num_virtual_procs
        if jax.process_index() == 0:
            print("RNG seed: {}".format(rng_seed))
            print("Total number of virtual processes: {}".format(total_num_virtual_procs))

    def create_and_connect(self):
        rank = jax.process_index()
        rng = np.random.default_rng(SIM["rng_seed"] + rank)  # per-VP stream for local connections
        self.weights = rng.normal(0.5, 0.1, (SIM["n_per_rank"],)).astype(np.float32)
        kernel.add_delays(np.round(rng.uniform(0.5, 3.0, 8), 1))
        self.v = np.zeros((SIM["n_per_rank"],), np.float32)

    def simulate(self):
        mesh = jax.make_mesh((jax.device_count(),), ("vp",))
        shard = NamedSharding(mesh, P("vp"))
        step = jax.jit(lambda v, w, drive: (0.9 * v + w * drive, jnp.sum(v > 1.0)),
                       out_shardings=(shard, NamedSharding(mesh, P())))
        v = jax.make_array_from_process_local_data(shard, self.v)
        w = jax.make_array_from_process_local_data(shard, self.weights)
        spikes = 0
        for t in range(SIM["steps"]):
            v, n_spk = step(v, w, jnp.float32(0.3 + 0.01 * t))
            spikes += int(n_spk)
        return spikes


def main():
    net = Network()
    net.setup_nest()
    net.create_and_connect()
    spikes = net.simulate()
    status = kernel.get_kernel_status()
    print("RESULT total_spikes", spikes)
    print("RESULT delay_extrema", round(status["min_delay"], 3), round(status["max_delay"], 3))


main()
