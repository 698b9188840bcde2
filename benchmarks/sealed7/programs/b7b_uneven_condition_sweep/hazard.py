# Port of a SMART (FEniCS) multi-mesh MPI bug: a parameter sweep is split over ranks by striding,
# each condition's solve enters a collective assembly, and ranks run different numbers of conditions.
# Source: https://github.com/RangamaniLabUCSD/smart/issues/94
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("cells",))


class Model:
    """A cell-signalling model on a sphere of radius `radius`; the mixed assembly is collective."""

    def __init__(self, radius: float, n_cells: int = 16):
        self.radius = radius
        self.n_cells = n_cells

    def _assemble_mixed(self) -> jax.Array:
        sharding = NamedSharding(MESH, P("cells"))
        r = np.linspace(0.0, self.radius, self.n_cells, dtype=np.float32)
        return jax.make_array_from_callback((self.n_cells,), sharding, lambda idx: r[idx])

    def solve_steady_state(self) -> float:
        coords = self._assemble_mixed()
        flux = jax.jit(lambda r: jnp.sum(jnp.exp(-r) * r ** 2) / r.shape[0])(coords)
        return float(flux)


def run_condition(radius: float) -> float:
    model = Model(radius)
    return model.solve_steady_state()


def sweep(radius_vec: np.ndarray) -> list[tuple[int, float]]:
    rank, size = jax.process_index(), jax.process_count()
    conditions_per_process = int(len(radius_vec) / size)
    results = []
    for idx in range(rank, len(radius_vec), conditions_per_process):
        results.append((idx, run_condition(float(radius_vec[idx]))))
    return results


radius_vec = np.logspace(0, 1, num=7)
mine = sweep(radius_vec)
print(f"process {jax.process_index()} ran {len(mine)} conditions")
done = multihost_utils.process_allgather(np.int32(len(mine)))
print(f"RESULT conditions_total {int(np.sum(done))}")
