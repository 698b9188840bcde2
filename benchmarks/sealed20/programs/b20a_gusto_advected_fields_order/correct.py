# Advection timestepper for a 1D periodic column split across processes (each process owns a
# contiguous slab of cells). Every advected field exchanges one halo cell with its neighbours
# each step; afterwards the field diagnostics are logged.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NCELLS = 64
DT = 0.2
DX = 1.0
WIND = 0.6


class State:
    def __init__(self, rank, nprocs):
        n = NCELLS // nprocs
        x = (np.arange(n) + rank * n + 0.5) * DX
        self.fields = {
            "u": np.stack([np.full(n, WIND), 0.1 * np.sin(2 * np.pi * x / NCELLS)]).astype(np.float32),
            "rho": (1.0 + 0.2 * np.sin(2 * np.pi * x / NCELLS)).astype(np.float32),
            "theta": (300.0 + 5.0 * np.cos(2 * np.pi * x / NCELLS)).astype(np.float32),
            "water_v": (0.01 * np.exp(-((x - 20.0) / 6.0) ** 2)).astype(np.float32),
            "water_c": (0.002 * (x > 40)).astype(np.float32),
            "rain": np.zeros(n, dtype=np.float32),
            "tracer": (x < 16).astype(np.float32),
        }


def halo_exchange(field, rank, nprocs):
    edges = np.stack([field[..., 0], field[..., -1]], axis=-1)
    gathered = np.asarray(multihost_utils.process_allgather(edges))
    left_neighbour = gathered[(rank - 1) % nprocs]
    return left_neighbour[..., 1]


@jax.jit
def upwind(field, halo, velocity):
    padded = jnp.concatenate([halo[..., None], field], axis=-1)
    return field - velocity * DT / DX * (padded[..., 1:] - padded[..., :-1])


class SSPRK3:
    def apply(self, field, halo, velocity):
        f1 = upwind(field, halo, velocity)
        f2 = 0.75 * field + 0.25 * upwind(f1, halo, velocity)
        return (1.0 / 3.0) * field + (2.0 / 3.0) * upwind(f2, halo, velocity)


class ForwardEuler:
    def apply(self, field, halo, velocity):
        return upwind(field, halo, velocity)


SCHEMES = {"ssprk3": SSPRK3(), "forward_euler": ForwardEuler()}


class AdvectionTimestepper:
    def __init__(self, state, advected_fields, rank, nprocs):
        self.state = state
        self.advected_fields = advected_fields
        self.rank, self.nprocs = rank, nprocs

    def run(self, nsteps):
        for _ in range(nsteps):
            for name, scheme in self.advected_fields:
                field = self.state.fields[name]
                halo = halo_exchange(field, self.rank, self.nprocs)
                self.state.fields[name] = np.asarray(SCHEMES[scheme].apply(field, halo, WIND))

    def diagnostics(self):
        for name, _ in self.advected_fields:
            total = np.asarray(multihost_utils.process_allgather(np.float32(self.state.fields[name].sum())))
            print(f"RESULT total_{name} {float(total.sum()):.5f}")


def main():
    rank, nprocs = jax.process_index(), jax.process_count()
    state = State(rank, nprocs)
    advected_fields = [("u", "forward_euler"), ("rho", "ssprk3"), ("theta", "ssprk3"),
                       ("water_v", "ssprk3"), ("water_c", "ssprk3"), ("rain", "ssprk3"),
                       ("tracer", "ssprk3")]
    stepper = AdvectionTimestepper(state, advected_fields, rank, nprocs)
    stepper.run(nsteps=10)
    stepper.diagnostics()


if __name__ == "__main__":
    main()
