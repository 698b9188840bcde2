# The Trainer all-gathers its floating-point-operation count on every process before process 0 saves
# Source: https://github.com/huggingface/transformers/pull/7365
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import json
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
OUTPUT_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed10_store_flos", os.environ.get("JOB_ID", "local"))
os.makedirs(OUTPUT_DIR, exist_ok=True)


@dataclass
class TrainingArguments:
    max_steps: int = 6
    save_steps: int = 3
    learning_rate: float = 0.05
    per_device_batch: int = 4


class Trainer:
    def __init__(self, args, mesh):
        self.args, self.mesh = args, mesh
        self.batch_sharding = NamedSharding(mesh, P("data"))
        self.params = jax.device_put(np.zeros((4,), np.float32), NamedSharding(mesh, P()))
        self.current_flos = 0.0
        self.total_flos = 0.0
        self._step = jax.jit(self._train_step)

    @staticmethod
    def _train_step(w, x, y, lr):
        loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - lr * g, loss

    def is_world_process_zero(self):
        return jax.process_index() == 0

    @staticmethod
    def floating_point_ops(x):
        return 6.0 * x.shape[0] * x.shape[1]

    def _store_flos(self):
        # the flos every process counted since the last store, summed over processes
        gathered = multihost_utils.process_allgather(np.float32(self.current_flos))
        self.total_flos += float(np.sum(gathered))
        self.current_flos = 0.0

    def save_model(self, step):
        ckpt = os.path.join(OUTPUT_DIR, f"checkpoint-{step}")
        os.makedirs(ckpt, exist_ok=True)
        np.save(os.path.join(ckpt, "params.npy"), np.asarray(self.params.addressable_data(0)))
        with open(os.path.join(ckpt, "trainer_state.json"), "w") as f:
            json.dump({"global_step": step, "total_flos": self.total_flos}, f)

    def _batch(self, step):
        rng = np.random.default_rng(1000 * step + jax.process_index())
        x = rng.normal(size=(self.args.per_device_batch, 4)).astype(np.float32)
        return x, x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)

    def train(self):
        loss = None
        for step in range(1, self.args.max_steps + 1):
            x, y = self._batch(step)
            self.current_flos += self.floating_point_ops(x)
            gx = jax.make_array_from_process_local_data(self.batch_sharding, x)
            gy = jax.make_array_from_process_local_data(self.batch_sharding, y)
            self.params, loss = self._step(self.params, gx, gy, self.args.learning_rate)
            if step % self.args.save_steps == 0:
                self._store_flos()
                if self.is_world_process_zero():
                    self.save_model(step)
        multihost_utils.sync_global_devices("train_end")
        return float(loss)


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("data",), axis_types=(jax.sharding.AxisType.Auto,))
    trainer = Trainer(TrainingArguments(), mesh)
    loss = trainer.train()
    print("RESULT final_loss", round(loss, 5))
    print("RESULT total_flos", trainer.total_flos)


main()
