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
class Config:
    Nx: int = 2          # single column: one real Fourier pair in x
    Nz: int = 16
    nu: float = 0.05
    dt: float = 0.01
    stop_iteration: int = 20


class Distributor:
    def __init__(self):
        self.rank = jax.process_index()
        self.size = jax.process_count()
        self.mesh = Mesh(np.array(jax.devices()), ("x",))
        self.grid_sharding = NamedSharding(self.mesh, P("x", None))
        self.coeff_sharding = NamedSharding(self.mesh, P())

    def local_groups(self, n_groups):
        block = -(-n_groups // self.size)
        start = min(self.rank * block, n_groups)
        return range(start, min(start + block, n_groups))


_forward = None


class Field:
    def __init__(self, dist, name, shape):
        global _forward
        self.dist, self.name, self.shape = dist, name, shape
        self.layout = "g"
        rows = shape[0] // dist.size
        self.gdata = jax.make_array_from_process_local_data(dist.grid_sharding, np.zeros((rows, shape[1]), np.float32))
        self.cdata = None
        if _forward is None:
            _forward = jax.jit(lambda a: jnp.fft.rfft(a, axis=0), out_shardings=dist.coeff_sharding)

    def set_grid(self, local):
        self.gdata = jax.make_array_from_process_local_data(self.dist.grid_sharding, np.asarray(local, np.float32))
        self.layout = "g"

    def local_grid(self):
        return np.asarray(self.gdata.addressable_shards[0].data)

    def require_coeff_space(self):
        if self.layout == "g":
            self.cdata = np.array(_forward(self.gdata))
            self.layout = "c"

    def require_grid_space(self):
        if self.layout == "c":
            full = np.fft.irfft(self.cdata, n=self.shape[0], axis=0).astype(np.float32)
            rows = self.shape[0] // self.dist.size
            self.set_grid(full[self.dist.rank * rows:(self.dist.rank + 1) * rows])

    def __getitem__(self, layout):
        if layout == "c":
            self.require_coeff_space()
            return self.cdata
        self.require_grid_space()
        return self.local_grid()


class Subproblem:
    def __init__(self, group, cfg):
        self.group = group
        kz = np.fft.fftfreq(cfg.Nz, 1.0 / cfg.Nz)
        self.lhs = 1.0 + cfg.dt * cfg.nu * (group ** 2 + kz ** 2)

    def gather(self, fields):
        return np.stack([f["c"][self.group] for f in fields])

    def scatter(self, data, fields):
        for f, d in zip(fields, data):
            f.cdata[self.group] = d


class MultistepIMEX:
    def __init__(self, solver):
        self.solver = solver

    def step(self, dt):
        s = solver = self.solver
        u = s.state[0]
        s.F[0].set_grid(-u["g"] * np.gradient(u["g"], axis=-1))
        for sp in solver.subproblems:
            X = sp.gather(s.state)
            F = sp.gather(s.F)
            sp.scatter((X + dt * F) / sp.lhs, s.state)
        s.sync_state()


class InitialValueSolver:
    def __init__(self, dist, cfg):
        self.dist, self.cfg = dist, cfg
        self.state = [Field(dist, "u", (cfg.Nx, cfg.Nz))]
        self.F = [Field(dist, "F_u", (cfg.Nx, cfg.Nz))]
        n_groups = cfg.Nx // 2  # Nyquist mode is dropped
        self.subproblems = [Subproblem(g, cfg) for g in dist.local_groups(n_groups)]
        self.timestepper = MultistepIMEX(self)
        self.iteration = 0

    def sync_state(self):
        for f in self.state:
            contrib = np.zeros((self.cfg.Nx // 2 + 1, self.cfg.Nz), np.complex64)
            for sp in self.subproblems:
                contrib[sp.group] = f.cdata[sp.group]
            total = multihost_utils.process_allgather(contrib).sum(0)
            f.cdata = np.array(total)
            f.layout = "c"

    def step(self, dt):
        self.timestepper.step(dt)
        self.iteration += 1


def main():
    cfg = Config()
    dist = Distributor()
    solver = InitialValueSolver(dist, cfg)
    z = np.linspace(0, 2 * np.pi, cfg.Nz, endpoint=False)
    rows = cfg.Nx // dist.size
    x0 = np.arange(dist.rank * rows, (dist.rank + 1) * rows)[:, None]
    solver.state[0].set_grid(np.sin(z)[None, :] * (1.0 + 0.1 * x0))
    print(f"rank {dist.rank}: {len(solver.subproblems)} local subproblems")
    while solver.iteration < cfg.stop_iteration:
        solver.step(cfg.dt)
    u = solver.state[0]
    u.require_coeff_space()
    print("RESULT iterations", solver.iteration)
    print("RESULT u_coeff_norm", round(float(np.abs(u.cdata).sum()), 4))


if __name__ == "__main__":
    main()
