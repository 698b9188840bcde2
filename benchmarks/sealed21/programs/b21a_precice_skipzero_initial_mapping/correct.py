import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUMERICAL_ZERO_DIFFERENCE = 1e-14


class IntraComm:
    @staticmethod
    def allgather(x):
        return np.asarray(multihost_utils.process_allgather(np.asarray(x)))

    @staticmethod
    def l2norm(values):
        return float(np.sqrt(IntraComm.allgather(np.float32(np.sum(values ** 2))).sum()))


class Mesh:
    def __init__(self, coords):
        self.coords = np.asarray(coords, np.float32).reshape(-1, 2)

    def n_vertices(self):
        return self.coords.shape[0]


class GlobalRBFMapping:
    """Gaussian RBF consistent mapping whose system is assembled over all ranks (like the Eigen RBF)."""

    def __init__(self, input_mesh, output_mesh, shape=4.0):
        self.input_mesh, self.output_mesh, self.shape = input_mesh, output_mesh, shape

    def _gather(self, local, width):
        counts = IntraComm.allgather(np.int32(local.shape[0]))
        padded = np.zeros((int(counts.max()), width), np.float32)
        padded[:local.shape[0]] = local.reshape(-1, width)
        every = IntraComm.allgather(padded)
        return np.concatenate([every[r, :counts[r]] for r in range(len(counts))])

    def map(self, values):
        xs = self._gather(self.input_mesh.coords, 2)
        vs = self._gather(values.reshape(-1, 1), 1)[:, 0]
        phi = lambda a, b: jnp.exp(-self.shape * jnp.sum((a[:, None] - b[None]) ** 2, -1))
        w = jnp.linalg.solve(phi(xs, xs) + 1e-6 * jnp.eye(len(xs)), vs)
        return np.asarray(phi(jnp.asarray(self.output_mesh.coords), xs) @ w)


class DataContext:
    def __init__(self, mapping):
        self.mapping = mapping
        self.sample_values = np.zeros(mapping.input_mesh.n_vertices(), np.float32)
        self.mapped = np.zeros(mapping.output_mesh.n_vertices(), np.float32)

    def map_data(self, skip_zero):
        skip_mapping = skip_zero and (IntraComm.l2norm(self.sample_values) < NUMERICAL_ZERO_DIFFERENCE)
        if skip_mapping:
            return 0
        self.mapped = self.mapping.map(self.sample_values)
        return 1


class Participant:
    """The solver side of a coupling: this rank's part of the interface and the data it receives."""

    def __init__(self, rank):
        # Only rank 0's subdomain touches the coupling interface.
        if rank == 0:
            recv = Mesh([[x, 0.0] for x in np.linspace(0.0, 1.0, 6)])
            own = Mesh([[x, 0.0] for x in np.linspace(0.05, 0.95, 5)])
        else:
            recv, own = Mesh([]), Mesh([])
        self.context = DataContext(GlobalRBFMapping(recv, own))
        self.time = 0.0

    def receive(self, t):
        coords = self.context.mapping.input_mesh.coords
        self.context.sample_values = (np.sin(3.0 * coords[:, 0]) + t).astype(np.float32)

    def initialize(self):
        self.receive(0.0)  # exchange initialize="true": initial data from the other participant
        return self.context.map_data(skip_zero=True)

    def advance(self, dt):
        self.time += dt
        self.receive(self.time)
        n = self.context.map_data(skip_zero=False)
        force = self.context.mapped
        return n, IntraComm.l2norm(force)


def main():
    participant = Participant(jax.process_index())
    n_init = participant.initialize()
    print(f"rank {jax.process_index()}: initial mappings {n_init}")
    norms = []
    for _ in range(3):
        _, nrm = participant.advance(0.1)
        norms.append(round(nrm, 4))
    print("RESULT force_norms", norms)
    print("RESULT time", round(participant.time, 3))


if __name__ == "__main__":
    main()
