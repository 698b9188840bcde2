# The termination mode's stagnation test applies the configured (global) norm to the step, like the residual test
# Source: https://github.com/SciML/NonlinearSolve.jl/issues/1310
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from dataclasses import dataclass
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

N_LOCAL, MAXITERS, DAMPING = 4, 60, 0.5


@jax.jit
def _global_l2(v):
    return jnp.sqrt(jnp.sum(v * v))  # reduction over the sharded vector: a cross-process collective


def mpi_norm(v):
    return float(_global_l2(v))


def l2_norm(v):
    return float(np.linalg.norm(np.asarray(v.addressable_data(0))))  # this process's block only


@dataclass
class AbsNormSafeTerminationMode:
    internalnorm: Callable
    abstol: float = 1e-6
    stagnation_tol: float = 1e-3


class TerminationCache:
    def __init__(self, mode):
        self.mode = mode
        self.retcode = None

    def check(self, fu, du):
        if self.mode.internalnorm(fu) < self.mode.abstol:
            self.retcode = "Success"
            return True
        du_norm = self.mode.internalnorm(du)  # same global norm as the residual test
        if du_norm < self.mode.stagnation_tol:
            self.retcode = "Stalled"
            return True
        return False


@jax.jit
def residual(u, stiffness, target):
    return stiffness * u + 0.1 * u ** 3 - target


@jax.jit
def damped_step(u, fu, stiffness):
    du = -DAMPING * fu / (stiffness + 0.3 * u ** 2)
    return u + du, du


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("dof",))
    dof = NamedSharding(mesh, P("dof"))
    # process 0 owns a well-conditioned block, process 1 a block whose iterates move slowly
    k_local = np.full((N_LOCAL,), 4.0 if jax.process_index() == 0 else 0.05, np.float32)
    stiffness = jax.make_array_from_process_local_data(dof, k_local)
    target = jax.make_array_from_process_local_data(dof, np.ones((N_LOCAL,), np.float32))
    u = jax.make_array_from_process_local_data(dof, np.zeros((N_LOCAL,), np.float32))
    cache = TerminationCache(AbsNormSafeTerminationMode(internalnorm=mpi_norm))
    it = 0
    for it in range(1, MAXITERS + 1):
        fu = residual(u, stiffness, target)
        u, du = damped_step(u, fu, stiffness)
        if cache.check(fu, du):
            break
    print("RESULT retcode", cache.retcode)
    print("RESULT iterations", it)
    print("RESULT residual_norm", f"{mpi_norm(residual(u, stiffness, target)):.3e}")


main()
