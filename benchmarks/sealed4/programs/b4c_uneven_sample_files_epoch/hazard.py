# Sample files not divisible across ranks: one rank gets one full batch fewer per epoch and leaves the step loop early
# Source: https://github.com/argonne-lcf/dlio_benchmark/pull/339
# Written for the mcjax sealed4 evaluation (not copied): a port of a DLIO benchmark (mpi4py/torch) bug to
# multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("workers",))
SHARDED = NamedSharding(MESH, P("workers"))


@dataclasses.dataclass
class ConfigArguments:
    data_folder: str
    num_files_train: int = 31
    record_length: int = 8
    batch_size: int = 4
    epochs: int = 2
    comm_size: int = 1
    my_rank: int = 0


def generate_data(args: ConfigArguments) -> None:
    if args.my_rank == 0:
        os.makedirs(args.data_folder, exist_ok=True)
        for i in range(args.num_files_train):
            rng = np.random.default_rng(i)
            np.save(os.path.join(args.data_folder, f"img_{i:04d}.npy"),
                    rng.normal(size=(args.record_length,)).astype(np.float32))
    multihost_utils.sync_global_devices("data_generated")


class NPYReader:
    def __init__(self, args: ConfigArguments):
        self.args = args
        files = sorted(f for f in os.listdir(args.data_folder) if f.endswith(".npy"))
        self.file_list = files[args.my_rank::args.comm_size]

    def next(self):
        batch = []
        for name in self.file_list:
            batch.append(np.load(os.path.join(self.args.data_folder, name)))
            if len(batch) == self.args.batch_size:
                yield np.stack(batch)
                batch = []
        # the incomplete last batch is dropped (drop_last)


@jax.jit
def emulate_compute(state, batch):
    return state + jnp.mean(batch, axis=0)  # cross-worker reduction over the global batch


class DLIOBenchmark:
    def __init__(self, args: ConfigArguments):
        self.args = args
        generate_data(args)
        self.reader = NPYReader(args)
        self.state = jnp.zeros((args.record_length,), jnp.float32)

    def _train(self, epoch: int) -> int:
        step = 0
        for batch in self.reader.next():
            global_batch = jax.make_array_from_process_local_data(SHARDED, batch)
            self.state = emulate_compute(self.state, global_batch)
            step += 1
        return step

    def run(self):
        total = 0
        for epoch in range(1, self.args.epochs + 1):
            total += self._train(epoch)
            multihost_utils.sync_global_devices(f"end_of_epoch_{epoch}")
        return total


args = ConfigArguments(
    data_folder=os.path.join(tempfile.gettempdir(), "mcjax_b4c_dlio", os.environ.get("JOB_ID", "local")),
    comm_size=jax.process_count(), my_rank=jax.process_index())
bench = DLIOBenchmark(args)
steps = bench.run()
print("RESULT steps", steps)
print("RESULT state", np.round(np.asarray(bench.state), 4).tolist())
