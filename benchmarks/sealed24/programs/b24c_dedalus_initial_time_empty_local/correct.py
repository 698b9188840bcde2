import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Params:
    Nx: int = 32
    kappa: float = 0.02
    safety: float = 0.4
    restart_sim_time: float = 2.5
    stop_sim_time: float = 3.0
    max_dt: float = 0.05


class Distributor:
    def __init__(self):
        self.rank, self.size = jax.process_index(), jax.process_count()
        self.mesh = Mesh(np.array(jax.devices()), ("x",))
        self.sharding = NamedSharding(self.mesh, P("x"))

    def local_slice(self, global_size):
        block = -(-global_size // self.size)
        start = min(global_size, block * self.rank)
        return slice(start, min(global_size, start + block))


class Field:
    def __init__(self, dist, name, size):
        self.dist, self.name, self.size = dist, name, size
        self.local = dist.local_slice(size)
        self.data = np.zeros(self.local.stop - self.local.start)

    def __getitem__(self, layout):
        return self.data

    def __setitem__(self, layout, value):
        self.data[...] = value

    def global_array(self):
        return jax.make_array_from_process_local_data(self.dist.sharding, self.data.astype(np.float32), (self.size,))

    def allreduce_data_max(self, layout="g"):
        local = np.max(np.abs(self.data)) if self.data.size else 0.0
        return float(np.max(multihost_utils.process_allgather(np.float64(local))))


class IVP:
    def __init__(self, dist, params):
        self.dist = dist
        self.u = Field(dist, "u", params.Nx)
        self.time = Field(dist, "t", 1)   # constant field: no basis in x


@jax.jit
def _cfl_rate(u):
    return jnp.max(jnp.abs(u))


@jax.jit
def _diffuse(u, dt, kappa):
    lap = jnp.roll(u, 1) - 2 * u + jnp.roll(u, -1)
    return u + dt * kappa * lap * u.shape[0] ** 2 / 64.0


class InitialValueSolver:
    def __init__(self, problem, params):
        self.problem, self.params = problem, params
        self.sim_time = self.initial_sim_time = problem.time.allreduce_data_max(layout="g")
        self.iteration = 0
        self.state = problem.u.global_array()

    @property
    def proceed(self):
        return self.sim_time < self.params.stop_sim_time

    def compute_timestep(self):
        rate = float(_cfl_rate(self.state))
        return min(self.params.max_dt, self.params.safety / max(rate, 1e-12))

    def step(self, dt):
        self.state = _diffuse(self.state, dt, self.params.kappa)
        self.sim_time += dt
        self.iteration += 1


def main():
    params = Params()
    dist = Distributor()
    problem = IVP(dist, params)
    x = np.linspace(0, 1, params.Nx, endpoint=False)[problem.u.local]
    problem.u["g"] = np.sin(2 * np.pi * x) + 0.5
    problem.time["g"] = params.restart_sim_time
    print(f"rank {dist.rank}: local u {problem.u.data.shape}, local t {problem.time.data.shape}")
    u0_max = problem.u.allreduce_data_max(layout="g")
    solver = InitialValueSolver(problem, params)
    while solver.proceed:
        solver.step(solver.compute_timestep())
    u = np.asarray(multihost_utils.process_allgather(solver.state, tiled=True))
    print("RESULT initial_u_max", round(u0_max, 6))
    print("RESULT iterations", solver.iteration)
    print("RESULT sim_time", round(float(solver.sim_time), 6))
    print("RESULT u_sum", round(float(u.sum()), 4))


if __name__ == "__main__":
    main()
