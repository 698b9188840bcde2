# Time-parallel block iteration (one time slice per process) stopped by an iteration estimator fed with the process's own increment
# Source: https://github.com/Parallel-in-Time/pySDC/pull/679
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import math
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax, shard_map
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class BlockParams:
    slice_length: float = 0.5
    fine_steps: int = 200
    errtol: float = 1e-7
    maxiter: int = 12


N = jax.process_count()
MESH = Mesh(np.array(jax.devices()), ("t",))
SLICES = NamedSharding(MESH, P("t", None))
A = jnp.array([[0.0, 1.0], [-4.0, -0.3]], jnp.float32)   # damped oscillator


def fine_propagate(u, p):
    h = p.slice_length / p.fine_steps
    return lax.fori_loop(0, p.fine_steps, lambda _, y: y + h * (A @ y), u)


def make_block_iteration(p):
    def body(start, u0):
        u_end = fine_propagate(start[0], p)
        received = lax.ppermute(u_end, "t", perm=[(i, i + 1) for i in range(N - 1)])
        new_start = jnp.where(lax.axis_index("t") == 0, u0[0], received)
        return new_start[None], u_end[None]
    spec = P("t", None)
    return jax.jit(shard_map(body, mesh=MESH, in_specs=(spec, spec), out_specs=(spec, spec)))


class CheckIterationEstimator:
    """Estimates how many more iterations the block needs from the contraction of the increments."""

    def __init__(self, errtol):
        self.errtol = errtol
        self.diff_first = None
        self.diff_old = None

    def block_max(self, value):
        return value

    def stop(self, k, diff_local):
        diff_new = self.block_max(diff_local)
        if k == 1:
            self.diff_first = diff_new
        done = diff_new <= self.errtol
        if not done and k > 1 and self.diff_old > 0.0:
            rho = diff_new / self.diff_old
            if 0.0 < rho < 1.0:
                k_est = math.log(self.errtol * (1.0 - rho) / self.diff_first) / math.log(rho)
                done = math.ceil(k_est) <= k
        self.diff_old = diff_new
        return done


def main():
    p = BlockParams()
    block_iteration = make_block_iteration(p)
    u0 = np.array([[1.0, 0.0]], np.float32)
    start = jax.make_array_from_process_local_data(SLICES, u0)
    u0_arr = jax.make_array_from_process_local_data(SLICES, u0)
    estimator = CheckIterationEstimator(p.errtol)
    end_old = np.zeros(2)
    k = 0
    while k < p.maxiter:
        k += 1
        start, end = block_iteration(start, u0_arr)
        end_local = np.asarray(end.addressable_data(0), np.float64)[0]
        diff_local = float(np.linalg.norm(end_local - end_old))
        end_old = end_local
        if estimator.stop(k, diff_local):
            break
    ends = multihost_utils.process_allgather(end_old.astype(np.float32))
    print("RESULT iterations", k)
    print("RESULT final_state", np.round(np.asarray(ends)[-1], 5).tolist())


if __name__ == "__main__":
    main()
