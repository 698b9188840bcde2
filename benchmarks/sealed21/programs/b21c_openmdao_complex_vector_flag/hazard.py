# A small OpenMDAO-style model: a ParallelGroup of trajectory phases distributed over the
# processes, each phase a component with an optional nonlinear solver; Problem.setup allocates
# the output vector (complex when some solver needs complex-step), run_model solves the phases
# and gathers the distributed outputs to evaluate the objective.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class NewtonSolver:
    def __init__(self, maxiter=8, jac_method="cs"):
        self.maxiter, self.jac_method = maxiter, jac_method

    def needs_complex(self):
        return self.jac_method == "cs"


class Phase:
    def __init__(self, name, num_nodes, rate, nonlinear_solver=None):
        self.name, self.num_nodes, self.rate = name, num_nodes, rate
        self.nonlinear_solver = nonlinear_solver

    def residual(self, h, t):
        # implicit altitude profile: h' = rate * (1 - h / 10) integrated at the collocation nodes
        return h - 10.0 * (1.0 - jnp.exp(-self.rate * t / 10.0)) + 0.01 * h ** 2

    def solve(self, dtype):
        t = jnp.linspace(0.0, 5.0, self.num_nodes).astype(dtype)
        if self.nonlinear_solver is None:
            return (10.0 * (1.0 - jnp.exp(-self.rate * t / 10.0))).astype(dtype)
        h = jnp.zeros(self.num_nodes, dtype)
        step = 1e-20
        for _ in range(self.nonlinear_solver.maxiter):
            r = self.residual(h, t)
            drdh = jnp.imag(self.residual(h + 1j * step, t)) / step
            h = h - (r / drdh).astype(dtype)
        return h


class ParallelGroup:
    def __init__(self, subsystems):
        self.subsystems = subsystems

    def local_subsystems(self, rank, nprocs):
        return [s for i, s in enumerate(self.subsystems) if i % nprocs == rank]


class Problem:
    def __init__(self, model):
        self.model = model
        self.rank, self.nprocs = jax.process_index(), jax.process_count()

    def setup(self):
        self._local = self.model.local_subsystems(self.rank, self.nprocs)
        alloc_complex = any(s.nonlinear_solver is not None and s.nonlinear_solver.needs_complex()
                            for s in self._local)
        self._dtype = jnp.complex64 if alloc_complex else jnp.float32
        self._outputs = {s.name: np.zeros(s.num_nodes, self._dtype) for s in self._local}

    def run_model(self):
        for s in self._local:
            self._outputs[s.name] = np.asarray(jax.jit(s.solve, static_argnums=0)(self._dtype))
        local_vec = np.concatenate([self._outputs[s.name] for s in self._local])
        full = np.asarray(multihost_utils.process_allgather(local_vec)).reshape(-1)
        return float(np.real(full).sum()), float(np.real(full).max())


def main():
    model = ParallelGroup([
        Phase("climb", num_nodes=6, rate=3.0, nonlinear_solver=NewtonSolver()),
        Phase("cruise", num_nodes=6, rate=1.0),
    ])
    prob = Problem(model)
    prob.setup()
    total, h_max = prob.run_model()
    print(f"rank {prob.rank}: local phases {[s.name for s in prob._local]}, dtype {np.dtype(prob._dtype).name}")
    print("RESULT objective", round(total, 4))
    print("RESULT h_max", round(h_max, 4))


if __name__ == "__main__":
    main()
