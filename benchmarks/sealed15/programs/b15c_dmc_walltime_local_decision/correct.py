# DMC driver: the root's decision whether there is time for another block is broadcast, so all processes stop at the same block
# Source: https://github.com/QMCPACK/qmcpack/pull/460
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"max_blocks": 200, "time_limit_s": 1.6, "safety_padding": 3.0, "tau": 0.01, "dim": 48}
MESH = jax.make_mesh((jax.device_count(),), ("rank",))
_sum = jax.jit(lambda x: jnp.sum(x, axis=0), out_shardings=NamedSharding(MESH, P()))


def comm_sum(values):
    local = np.asarray(values, np.float64)[None, :]
    return np.asarray(_sum(jax.make_array_from_process_local_data(NamedSharding(MESH, P("rank")), local)))


class RunTimeControl:
    """Stops the run when the next block (with padding) would not fit in the time limit."""

    def __init__(self, limit):
        self.start, self.limit, self.block_time = time.monotonic(), limit, 0.0

    def record_block(self, seconds):
        self.block_time = max(self.block_time, seconds)

    def enough_time_for_next_block(self):
        elapsed = time.monotonic() - self.start
        return elapsed + CFG["safety_padding"] * self.block_time < self.limit


def propagate(walkers, rng, e_trial):
    """Drift-diffusion of every local walker; the local energy costs a small determinant each."""
    energies = np.empty(len(walkers))
    for w in range(len(walkers)):
        walkers[w] += np.sqrt(CFG["tau"]) * rng.standard_normal(walkers.shape[1])
        m = np.outer(walkers[w], walkers[w]) + np.eye(CFG["dim"]) * 2.0
        energies[w] = 0.5 * float(np.sum(walkers[w] ** 2)) - 0.01 * np.linalg.slogdet(m)[1]
    weights = np.exp(-CFG["tau"] * (energies - e_trial))
    return energies, weights


def main():
    rank = jax.process_index()
    rng = np.random.default_rng(5 + rank)
    n_walkers = 300 if rank == 0 else 10          # after branching, the walkers sit mostly on process 0
    walkers = rng.standard_normal((n_walkers, CFG["dim"])) * 0.3
    multihost_utils.sync_global_devices("dmc_start")
    rtc = RunTimeControl(CFG["time_limit_s"])
    e_trial, blocks, e_hist = 0.0, 0, []
    keep_going = True
    while keep_going and blocks < CFG["max_blocks"]:
        t0 = time.monotonic()
        energies, weights = propagate(walkers, rng, e_trial)
        rtc.record_block(time.monotonic() - t0)
        tot = comm_sum([float(np.sum(weights * energies)), float(np.sum(weights))])
        e_hist.append(tot[0] / tot[1])
        local_go = rtc.enough_time_for_next_block()
        shared = np.asarray(multihost_utils.broadcast_one_to_all(
            np.asarray([np.mean(e_hist[-5:]), float(local_go)], np.float64)))
        e_trial = float(shared[0])
        keep_going = bool(shared[1] > 0.5)
        blocks += 1
    final = comm_sum([float(blocks), float(n_walkers)])
    print("RESULT blocks", blocks, "blocks_sum", int(final[0]))
    print("RESULT e_trial", round(e_trial, 6), "walkers", int(final[1]))


main()
