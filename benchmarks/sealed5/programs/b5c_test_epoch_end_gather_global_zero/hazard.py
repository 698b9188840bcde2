# LightningModule.test_epoch_end gathers the test outputs only when trainer.is_global_zero
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/16541
# Port to multi-process JAX of a Lightning DDP test loop that hangs in self.all_gather.
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("ddp",))
DATA = NamedSharding(MESH, P("ddp"))
REPL = NamedSharding(MESH, P())


class Trainer:
    def __init__(self, max_epochs: int):
        self.max_epochs = max_epochs
        self.is_global_zero = jax.process_index() == 0

    def fit(self, module, loader):
        for _ in range(self.max_epochs):
            for batch in loader():
                module.training_step(batch)

    def test(self, module, loader):
        outputs = [module.test_step(batch, i) for i, batch in enumerate(loader())]
        return module.test_epoch_end(outputs)


@partial(jax.jit, out_shardings=REPL)
def sgd_step(w, x, y):
    g = jax.grad(lambda w: jnp.mean((jax.nn.sigmoid(jnp.sum(x * w, axis=1)) - y) ** 2))(w)
    return w - 0.5 * g


class DummyModel:
    def __init__(self, dim_in: int):
        self.trainer = None
        self.w = jax.device_put(np.zeros(dim_in, np.float32), REPL)

    def all_gather(self, outputs: list) -> np.ndarray:
        return np.asarray(multihost_utils.process_allgather(np.stack(outputs)))

    def training_step(self, batch):
        x, y = batch
        self.w = sgd_step(self.w, jax.make_array_from_process_local_data(DATA, x),
                          jax.make_array_from_process_local_data(DATA, y))

    def test_step(self, batch, batch_idx):
        x, _ = batch
        return x @ np.asarray(self.w.addressable_data(0))

    def test_epoch_end(self, outputs):
        if self.trainer.is_global_zero:
            outputs = self.all_gather(outputs)
            print(f"after gather, len = {len(outputs)}", flush=True)
        return outputs


def make_loader(seed: int):
    def loader():
        rng = np.random.default_rng(seed + jax.process_index())
        for _ in range(3):
            x = rng.random((4, 5)).astype(np.float32)
            yield x, (x.sum(axis=1) > 2.5).astype(np.float32)
    return loader


model = DummyModel(5)
trainer = Trainer(max_epochs=2)
model.trainer = trainer
trainer.fit(model, make_loader(0))
preds = trainer.test(model, make_loader(100))
trainer.fit(model, make_loader(200))  # a second fit stage after testing
print("RESULT w", np.round(np.asarray(model.w.addressable_data(0)), 4).tolist())
