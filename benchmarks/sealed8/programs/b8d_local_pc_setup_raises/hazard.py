# Block-Jacobi setup raises on the process whose local block is singular; the others wait in the failure reduction
# Source: https://github.com/FEniCS/dolfinx/issues/4359 (port of a dolfinx/PETSc MPI deadlock to JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NU, NP = 6, 2  # velocity and pressure unknowns of a tiny Taylor-Hood-like saddle-point system
KSP_DIVERGED_PC_FAILED, KSP_CONVERGED_RTOL = -11, 2


def assemble_saddle_point() -> np.ndarray:
    a = 4.0 * np.eye(NU) - np.eye(NU, k=1) - np.eye(NU, k=-1)
    b = np.zeros((NP, NU))
    b[0, :3], b[1, 3:] = 1.0, 1.0
    return np.block([[a, b.T], [b, np.zeros((NP, NP))]])


def reorder(k: np.ndarray, method: str) -> np.ndarray:
    """Graph reordering of the dofs before partitioning; RCM puts the pressure dofs first."""
    n = k.shape[0]
    perm = np.r_[NU:n, 0:NU] if method == "rcm" else np.arange(n)
    return k[np.ix_(perm, perm)]


class LocalILU:
    def factor(self, block: np.ndarray) -> np.ndarray:
        lu = block.copy()
        for i in range(lu.shape[0]):
            if abs(lu[i, i]) < 1e-12:
                raise RuntimeError("No method solve for Mat of type seqaij (zero pivot in local ILU)")
            lu[i + 1:, i] /= lu[i, i]
            lu[i + 1:, i + 1:] -= np.outer(lu[i + 1:, i], lu[i, i + 1:])
        return lu


class BlockJacobiPC:
    def __init__(self):
        self.failed_reason = 0
        self.sub = LocalILU()

    def setup(self, local_block: np.ndarray) -> None:
        self.factors = self.sub.factor(local_block)

    def reduce_failed_reason(self) -> int:
        codes = multihost_utils.process_allgather(np.array([self.failed_reason], dtype=np.int32))
        return int(np.max(np.asarray(codes)))


class KSP:
    def __init__(self, pc: BlockJacobiPC):
        self.pc = pc

    def solve(self, k: np.ndarray, rows: slice) -> int:
        self.pc.setup(k[rows, rows])
        if self.pc.reduce_failed_reason():
            return KSP_DIVERGED_PC_FAILED
        multihost_utils.sync_global_devices("ksp_iterations")
        return KSP_CONVERGED_RTOL


def main():
    pid, nproc = jax.process_index(), jax.process_count()
    k = reorder(assemble_saddle_point(), "rcm")
    n_local = k.shape[0] // nproc
    rows = slice(pid * n_local, (pid + 1) * n_local)
    reason = KSP(BlockJacobiPC()).solve(k, rows)
    print(f"RESULT converged_reason={reason}")


if __name__ == "__main__":
    main()
