# A small UWGeodynamics-style model driver: a Model holds a 1D temperature field on a mesh
# decomposed across processes, a Solver with PETSc-like options, and `run_for` advances the
# thermal diffusion with a jitted implicit (Jacobi) solve on the global array.
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

full_version = "2.7.0"
OPTION_KEYS = ("ksp_rtol", "ksp_max_it", "pc_jacobi_omega", "local_dofs")


class Solver:
    def __init__(self, local_dofs, options=None):
        self.options = {"ksp_rtol": 1e-6, "ksp_max_it": 40, "pc_jacobi_omega": 0.8}
        self.options.update(options or {})
        self.local_dofs = local_dofs

    def print_petsc_options(self):
        """Collect the solver options of every process (collective, like PETSc's options view)."""
        row = np.array([self.options[k] if k != "local_dofs" else self.local_dofs for k in OPTION_KEYS],
                       dtype=np.float64)
        table = np.asarray(multihost_utils.process_allgather(row))
        parts = [f"-{k} {table[0, i]:g}" for i, k in enumerate(OPTION_KEYS[:-1])]
        parts.append(f"-global_dofs {int(table[:, -1].sum())}")
        return " ".join(parts)


class Model:
    def __init__(self, nx=64, diffusivity=1.0e-2, dt=0.5):
        self.mesh = Mesh(np.array(jax.devices()), ("x",))
        self.sharding = NamedSharding(self.mesh, P("x"))
        self.nx, self.kappa, self.dt = nx, diffusivity, dt
        nloc = nx // jax.process_count()
        start = jax.process_index() * nloc
        coords = (np.arange(start, start + nloc) + 0.5) / nx
        local_T = np.where(np.abs(coords - 0.5) < 0.1, 1600.0, 300.0).astype(np.float32)
        self.temperature = jax.make_array_from_process_local_data(self.sharding, local_T, (nx,))
        self.solver = Solver(local_dofs=nloc)
        self.stepDone = 0
        self._step = jax.jit(self._implicit_step, out_shardings=(self.sharding, NamedSharding(self.mesh, P())))

    def _implicit_step(self, T_old):
        h = 1.0 / self.nx
        r = self.kappa * self.dt / h ** 2
        omega = self.solver.options["pc_jacobi_omega"]
        T = T_old
        for _ in range(int(self.solver.options["ksp_max_it"])):
            left = jnp.concatenate([T[:1], T[:-1]])
            right = jnp.concatenate([T[1:], T[-1:]])
            T_jac = (T_old + r * (left + right)) / (1.0 + 2.0 * r)
            T = (1 - omega) * T + omega * T_jac
        left = jnp.concatenate([T[:1], T[:-1]])
        right = jnp.concatenate([T[1:], T[-1:]])
        residual = jnp.linalg.norm((1.0 + 2.0 * r) * T - r * (left + right) - T_old)
        return T, residual

    def run_for(self, nstep):
        if jax.process_index() == 0:
            print("""Running with UWGeodynamics version {0}""".format(full_version))

        print("""Petsc {0}""".format(self.solver.print_petsc_options()))
        sys.stdout.flush()

        residuals = []
        for _ in range(nstep):
            self.temperature, res = self._step(self.temperature)
            residuals.append(float(res))
            self.stepDone += 1
        return residuals


def main():
    model = Model()
    residuals = model.run_for(5)
    T = np.asarray(multihost_utils.process_allgather(model.temperature, tiled=True))
    print("RESULT steps", model.stepDone)
    print("RESULT last_residual", f"{residuals[-1]:.3e}")
    print("RESULT T_max", round(float(T.max()), 3), "T_mean", round(float(T.mean()), 3))


if __name__ == "__main__":
    main()
