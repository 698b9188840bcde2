# Distributed model with a nonlinear solver: the convergence check runs on every process and all of them
# raise AnalysisError together; only the message printing is gated to the root (unless USE_PROC_FILES).
# Source: https://github.com/OpenMDAO/OpenMDAO/pull/1878
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("procs",))
DIST = NamedSharding(MESH, P("procs"))
LOCAL_SIZE = 3


class AnalysisError(RuntimeError):
    pass


def use_proc_files() -> bool:
    return os.environ.get("USE_PROC_FILES", "0").lower() in ("1", "true", "yes")


@dataclasses.dataclass
class SolverOptions:
    maxiter: int = 5
    atol: float = 1e-3
    iprint: int = 1
    err_on_non_converge: bool = True


@jax.jit
def newton_sweep(y, x):
    # solve y**3 + y = x element-wise; the norm is taken over the distributed vector
    r = y ** 3 + y - x
    y_new = y - r / (3 * y ** 2 + 1)
    return y_new, jnp.sqrt(jnp.sum(r * r))


class NewtonSolver:
    def __init__(self, options: SolverOptions):
        self.options = options

    def _is_printing_proc(self) -> bool:
        return use_proc_files() or jax.process_index() == 0

    def solve(self, x):
        y = jnp.ones_like(x)
        norm = np.inf
        for it in range(self.options.maxiter):
            y, norm = newton_sweep(y, x)
            norm = float(norm)
            if norm < self.options.atol:
                break
        converged = norm < self.options.atol
        if self.options.iprint > 0 and self._is_printing_proc():
            print(f"NL: Newton {'converged' if converged else 'failed to converge'} |r|={norm:.3e}")
        if not converged and self.options.err_on_non_converge:
            raise AnalysisError(f"Solver 'NL: Newton' failed to converge (|r|={norm:.3e})")
        return y


@jax.jit
def objective(y, x):
    return jnp.sum((y - 1.0) ** 2) + 0.01 * jnp.sum(x ** 2)


class Driver:
    """Steepest descent on the design vector; a failed analysis backtracks the step."""

    def __init__(self):
        self.solver = NewtonSolver(SolverOptions())
        local = np.linspace(1.0, 2.0, LOCAL_SIZE).astype(np.float32) * (1 + jax.process_index())
        self.x = jax.make_array_from_process_local_data(DIST, local)
        self.history = []
        self.failed = 0

    def run(self, iterations: int):
        step = 12.0
        for _ in range(iterations):
            trial = self.x + step
            try:
                y = self.solver.solve(trial)
            except AnalysisError:
                self.failed += 1
                step *= 0.5          # backtrack and try again next iteration
                continue
            self.history.append(round(float(objective(y, trial)), 4))
            self.x = trial
            step = -0.5 * step
        return self.history


driver = Driver()
history = driver.run(iterations=8)
print("RESULT history", history)
print("RESULT failed", driver.failed)
