# Particle diagnostics series: flush skips iterations this process did not touch, but flushing an iteration is collective
# Source: https://github.com/openPMD/openPMD-api/issues/1616
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"steps": 8, "window": (0.30, 0.55), "n_beam": 40, "v_beam": 0.06, "dt": 1.0}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def comm_sum(values):
    local = np.asarray(values, np.float64)[None, :]
    return np.asarray(_sum(jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)))


class Iteration:
    def __init__(self, index):
        self.index, self.chunks, self.dirty, self.written = index, [], False, None

    def store_chunk(self, name, data):
        self.chunks.append((name, np.asarray(data, np.float64)))
        self.dirty = True

    def flush(self):
        """Every process must take part: the data write gathers the block layout of all processes."""
        n_local = sum(c[1].size for c in self.chunks)
        s_local = sum(float(np.sum(c[1])) for c in self.chunks)
        layout = np.asarray(multihost_utils.process_allgather(np.asarray([n_local], np.int64))).reshape(-1)
        self.written = (int(layout.sum()), s_local)
        self.dirty = False


class Series:
    def __init__(self):
        self.iterations = {}

    def __getitem__(self, index):
        return self.iterations.setdefault(index, Iteration(index))

    def flush(self):
        for it in self.iterations.values():
            if it.dirty:
                it.flush()


def main():
    rank = jax.process_index()
    rng = np.random.default_rng(3 + rank)
    # the beam drifts right through the probe window; process 1's particles are already past it
    x = rng.uniform(0.05, 0.25, CFG["n_beam"]) + 0.5 * rank
    series, counts = Series(), []
    for step in range(CFG["steps"]):
        x = x + CFG["v_beam"] * CFG["dt"]
        it = series[step]
        lo, hi = CFG["window"]
        inside = x[(x >= lo) & (x < hi)]
        if len(inside):
            it.store_chunk("beam/position/x", inside)
        series.flush()
        counts.append(it.written[0] if it.written else 0)
        total = comm_sum([float(len(inside))])
        print("RESULT step", step, "in_window", int(total[0]))
    print("RESULT written_particles", counts)


main()
