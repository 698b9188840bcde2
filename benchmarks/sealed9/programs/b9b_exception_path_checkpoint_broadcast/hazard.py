# A data error raised on one rank sends that rank into the on-exception checkpoint, which broadcasts the path
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/6430
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CKPT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_exception_checkpoint", os.environ.get("JOB_ID", "job"))


class CorruptRecordError(ValueError):
    pass


class ShardReader:
    def __init__(self, corrupt_steps):
        self.rng = np.random.default_rng(jax.process_index())
        self.corrupt_steps = corrupt_steps.get(jax.process_index(), ())

    def load(self, step):
        if step in self.corrupt_steps:
            raise CorruptRecordError(f"process {jax.process_index()}: bad record in batch {step}")
        x = self.rng.normal(size=(4, 2)).astype(np.float32)
        return x, x @ np.array([0.5, -1.5], np.float32)


def fetch(reader, step):
    return reader.load(step)


class CheckpointOnException:
    def __init__(self, dirpath):
        self.dirpath = dirpath

    def save(self, step, params):
        name = f"interrupted-step{step}-pid{os.getpid()}.ckpt" if jax.process_index() == 0 else ""
        name = multihost_utils.broadcast_one_to_all(np.frombuffer(name.ljust(64).encode(), np.uint8))
        path = os.path.join(self.dirpath, bytes(np.asarray(name)).decode().strip())
        if jax.process_index() == 0:
            os.makedirs(self.dirpath, exist_ok=True)
            with open(path, "wb") as f:
                pickle.dump({"step": step, "params": np.asarray(params)}, f)
        multihost_utils.sync_global_devices("checkpoint_on_exception")
        return path


@jax.jit
def train_step(w, x, y):
    return w - 0.1 * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)


def fit(num_steps=8):
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    rows = NamedSharding(mesh, P("data"))
    w = jax.device_put(jnp.zeros((2,)), NamedSharding(mesh, P()))
    reader, on_exc = ShardReader({1: (3,)}), CheckpointOnException(CKPT_DIR)
    step = 0
    try:
        for step in range(num_steps):
            x, y = fetch(reader, step)
            w = train_step(w, jax.make_array_from_process_local_data(rows, x),
                           jax.make_array_from_process_local_data(rows, y))
        status = "finished"
    except CorruptRecordError:
        on_exc.save(step, w)
        status = f"interrupted at step {step}"
    return status, w


status, w = fit()
print("RESULT status", status)
print("RESULT w", np.round(np.asarray(w), 3).tolist())
