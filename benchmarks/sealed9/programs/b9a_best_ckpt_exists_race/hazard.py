# Non-writer processes check os.path.exists on the best checkpoint before process 0 has finished writing it
# Source: https://github.com/huggingface/optimum-habana/pull/2230
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
OUTPUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed9_best_ckpt", os.environ.get("JOB_ID", "local"))
os.makedirs(OUTPUT_DIR, exist_ok=True)  # shared by every process (a shared filesystem)


class Trainer:
    def __init__(self, mesh, num_epochs=3):
        self.mesh, self.num_epochs = mesh, num_epochs
        self.data = NamedSharding(mesh, P("batch"))
        self.params = jax.device_put(np.zeros((3,), np.float32), NamedSharding(mesh, P()))
        self.best_metric = np.inf
        self.best_model_checkpoint = None

    def _batch(self, epoch):
        rng = np.random.default_rng(100 * epoch + jax.process_index())
        return rng.normal(1.0, 0.1, size=(4, 3)).astype(np.float32)

    def _save_checkpoint(self, epoch, metric):
        ckpt_dir = os.path.join(OUTPUT_DIR, f"checkpoint-{epoch}")
        if jax.process_index() == 0:
            host_params = np.asarray(self.params.addressable_data(0))
            time.sleep(1.0)  # serialising a large model takes a while
            os.makedirs(ckpt_dir, exist_ok=True)
            np.save(os.path.join(ckpt_dir, "params.npy"), host_params)
        if metric < self.best_metric:
            self.best_metric = metric
            if os.path.exists(ckpt_dir):
                self.best_model_checkpoint = ckpt_dir

    def _load_best_model(self):
        multihost_utils.sync_global_devices("load_best_model")
        host = np.load(os.path.join(self.best_model_checkpoint, "params.npy"))
        self.params = jax.device_put(multihost_utils.broadcast_one_to_all(host), NamedSharding(self.mesh, P()))

    def train(self):
        step = jax.jit(lambda p, x: p + 0.1 * (jnp.mean(x, axis=0) - p))
        for epoch in range(self.num_epochs):
            x = jax.make_array_from_process_local_data(self.data, self._batch(epoch))
            self.params = step(self.params, x)
            metric = float(np.asarray(multihost_utils.process_allgather(
                jnp.mean((x - self.params) ** 2), tiled=True)).ravel()[0])
            self._save_checkpoint(epoch, metric)
        if self.best_model_checkpoint is not None:
            self._load_best_model()
        return self.best_model_checkpoint


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("batch",), axis_types=(jax.sharding.AxisType.Auto,))
    best = Trainer(mesh).train()
    print("RESULT best", None if best is None else os.path.basename(best))


main()
