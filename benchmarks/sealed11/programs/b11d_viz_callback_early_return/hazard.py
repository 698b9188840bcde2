# A visualisation callback returns early on non-zero processes, skipping the barrier that process 0 reaches after rendering
# Source: https://github.com/talmolab/sleap-nn/pull/437
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
VIZ_DIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed11_viz_callback_early_return",
                       os.environ.get("JOB_ID", "local"))


class Strategy:
    def barrier(self, name):
        multihost_utils.sync_global_devices(name)


class Trainer:
    def __init__(self, callbacks, epochs=3):
        self.mesh = Mesh(np.array(jax.devices()), ("data",))
        self.batch = NamedSharding(self.mesh, P("data"))
        self.strategy = Strategy()
        self.callbacks = callbacks
        self.epochs = epochs
        self.current_epoch = 0
        self.params = jax.device_put(np.zeros((3,), np.float32), NamedSharding(self.mesh, P()))
        self._step = jax.jit(self._train_step)

    @property
    def is_global_zero(self):
        return jax.process_index() == 0

    @staticmethod
    def _train_step(w, x, y):
        loss, g = jax.value_and_grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
        return w - 0.1 * g, loss

    def fit(self):
        loss = None
        for epoch in range(self.epochs):
            self.current_epoch = epoch
            for step in range(2):
                rng = np.random.default_rng(100 * epoch + 10 * step + jax.process_index())
                x = rng.normal(size=(4, 3)).astype(np.float32)
                y = x @ np.array([0.5, -1.0, 2.0], np.float32)
                gx = jax.make_array_from_process_local_data(self.batch, x)
                gy = jax.make_array_from_process_local_data(self.batch, y)
                self.params, loss = self._step(self.params, gx, gy)
            for cb in self.callbacks:
                cb.on_train_epoch_end(self)
        return float(loss)


class UnifiedVizCallback:
    def __init__(self, sample):
        self.sample = sample

    def on_train_epoch_end(self, trainer):
        if not trainer.is_global_zero:
            return
        w = np.asarray(trainer.params.addressable_data(0))
        os.makedirs(VIZ_DIR, exist_ok=True)
        np.save(os.path.join(VIZ_DIR, f"pred_epoch{trainer.current_epoch}.npy"), self.sample @ w)
        trainer.strategy.barrier(f"viz_epoch_{trainer.current_epoch}")


def main():
    sample = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
    trainer = Trainer([UnifiedVizCallback(sample)])
    loss = trainer.fit()
    print("RESULT final_loss", round(loss, 5))
    print("RESULT params", np.round(np.asarray(trainer.params.addressable_data(0)), 5).tolist())


if __name__ == "__main__":
    main()
