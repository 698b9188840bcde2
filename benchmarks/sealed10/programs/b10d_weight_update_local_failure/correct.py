# update_weights_from_tensor turns a rank-local failure into a status that every rank all-gathers before returning
# Source: https://github.com/sgl-project/sglang/pull/35093
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ROWS, DIM = 8, 4


class TpModelWorker:
    def __init__(self, mesh):
        self.mesh = mesh
        self.tp_rank, self.tp_size = jax.process_index(), jax.process_count()
        self.row_sharding = NamedSharding(mesh, P("tp", None))
        init = np.arange(ROWS * DIM, dtype=np.float32).reshape(ROWS, DIM) / 10.0
        self.weight = jax.make_array_from_process_local_data(self.row_sharding, self._my_rows(init))
        self.cache = {}
        self._forward = jax.jit(lambda w, x: jnp.tanh(w @ x), out_shardings=NamedSharding(mesh, P()))

    def _my_rows(self, full):
        return np.array_split(full, self.tp_size)[self.tp_rank]

    def _load_local(self, new_full):
        shard = self._my_rows(new_full)
        expected = (ROWS // self.tp_size, DIM)
        if shard.shape != expected:
            raise ValueError(f"shard shape {shard.shape} != {expected}")
        self.weight = jax.make_array_from_process_local_data(self.row_sharding, shard)

    def flush_cache(self):
        self.cache.clear()

    def update_weights_from_tensor(self, new_full):
        try:
            self._load_local(new_full)
            self.flush_cache()
            status, message = 1, "ok"
        except Exception as e:  # reported back to the caller
            status, message = 0, f"rank {self.tp_rank}: {e}"
        statuses = np.asarray(multihost_utils.process_allgather(np.int32(status))).ravel()
        if not statuses.all():
            return False, f"failed on ranks {np.flatnonzero(statuses == 0).tolist()}"
        return True, message

    def forward(self, x):
        out = self._forward(self.weight, x)
        return np.asarray(out.addressable_data(0))


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("tp",), axis_types=(jax.sharding.AxisType.Auto,))
    worker = TpModelWorker(mesh)
    x = np.linspace(-1.0, 1.0, DIM).astype(np.float32)
    rng = np.random.default_rng(7)  # the trainer's pushed weights: same on every rank
    requests = [("update", rng.normal(size=(ROWS, DIM)).astype(np.float32)), ("generate", x),
                ("update", rng.normal(size=(ROWS - 1, DIM)).astype(np.float32)), ("generate", x)]
    for i, (kind, payload) in enumerate(requests):
        if kind == "update":
            ok, _ = worker.update_weights_from_tensor(payload)
            print("RESULT update", i, ok)
        else:
            print("RESULT generate", i, np.round(worker.forward(payload), 4).tolist())


main()
