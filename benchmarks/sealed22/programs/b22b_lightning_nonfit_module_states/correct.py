import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FITTING, TESTING = "fit", "test"


def _sync_module_states(module):
    """Broadcast every parameter from rank 0, as the DDP wrapper does when it is constructed."""
    module.params = {k: jnp.asarray(multihost_utils.broadcast_one_to_all(np.asarray(v)))
                     for k, v in module.params.items()}


class Linear:
    def __init__(self, in_features, out_features, rng):
        bound = 1.0 / np.sqrt(in_features)
        self.params = {"weight": jnp.asarray(rng.uniform(-bound, bound, size=(in_features, out_features))),
                       "bias": jnp.asarray(rng.uniform(-bound, bound, size=(out_features,)))}

    def __call__(self, x):
        return x @ self.params["weight"] + self.params["bias"]


class DDPStrategy:
    def __init__(self):
        self.global_rank = jax.process_index()
        self.world_size = jax.process_count()
        self.model = None

    def reduce(self, value):
        return float(np.asarray(multihost_utils.process_allgather(np.float32(value))).mean())

    def configure_ddp(self):
        _sync_module_states(self.model)

    def setup(self, trainer_fn, model):
        self.model = model
        if trainer_fn == FITTING:
            self.configure_ddp()
        else:
            _sync_module_states(self.model)


class RegressionModel:
    def setup(self, stage):
        self.layer = Linear(4, 1, np.random.default_rng())
        self.params = self.layer.params

    def test_step(self, batch):
        x, y = batch
        self.layer.params = self.params
        pred = self.layer(x)
        return float(jnp.mean((pred[:, 0] - y) ** 2))


class Trainer:
    def __init__(self):
        self.strategy = DDPStrategy()
        self.callback_metrics = {}

    def _shard(self, dataset):
        return dataset[self.strategy.global_rank::self.strategy.world_size]

    def test(self, model, dataset, batch_size=4):
        model.setup(TESTING)
        self.strategy.setup(TESTING, model)
        shard = self._shard(dataset)
        losses = [model.test_step((np.stack([x for x, _ in shard[i:i + batch_size]]),
                                   np.array([y for _, y in shard[i:i + batch_size]], np.float32)))
                  for i in range(0, len(shard), batch_size)]
        self.callback_metrics["test_loss"] = self.strategy.reduce(np.mean(losses))
        return [dict(self.callback_metrics)]


def make_dataset(n=32):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype(np.float32)
    y = x @ np.array([0.5, -1.0, 2.0, 0.0], np.float32) + 0.1
    return list(zip(x, y))


def main():
    trainer = Trainer()
    model = RegressionModel()
    results = trainer.test(model, make_dataset())
    weights = np.asarray(model.params["weight"]).ravel()
    print(f"rank {trainer.strategy.global_rank}: test results {results}")
    print("RESULT test_loss", round(results[0]["test_loss"], 4))
    print("RESULT evaluated_weights", np.round(weights, 4).tolist())


if __name__ == "__main__":
    main()
