# A LightningCLI-style run ("fit" then "test") with a SaveConfigCallback that writes the resolved
# config into the trainer's log_dir once, on global rank zero, the first time a stage is set up.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class DDPStrategy:
    def broadcast(self, obj, src=0):
        data = np.frombuffer(json.dumps(obj).encode().ljust(256), dtype=np.uint8)
        out = np.asarray(multihost_utils.broadcast_one_to_all(data, is_source=jax.process_index() == src))
        return json.loads(out.tobytes().decode().strip())

    def reduce_mean(self, value):
        return float(np.asarray(multihost_utils.process_allgather(np.float32(value))).mean())


class Trainer:
    def __init__(self, default_root_dir, callbacks, max_epochs=2):
        self.strategy = DDPStrategy()
        self.default_root_dir = default_root_dir
        self.callbacks = callbacks
        self.max_epochs = max_epochs
        self.is_global_zero = jax.process_index() == 0
        self.logged = {}

    @property
    def log_dir(self):
        version = len(os.listdir(self.default_root_dir)) if self.is_global_zero else None
        path = os.path.join(self.default_root_dir, f"version_{version}")
        return self.strategy.broadcast(path)

    def _setup(self, module, stage):
        for cb in self.callbacks:
            cb.setup(self, module, stage)

    def fit(self, module, data):
        self._setup(module, "fit")
        for _ in range(self.max_epochs):
            for x, y in data:
                grads = module.grad(x, y)
                grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
                         for k, g in grads.items()}
                module.step(grads)
        self.logged["train_loss"] = self.strategy.reduce_mean(module.loss(*data[-1]))

    def test(self, module, data):
        self._setup(module, "test")
        losses = [module.loss(x, y) for x, y in data]
        self.logged["test_loss"] = self.strategy.reduce_mean(np.mean(losses))
        return self.logged


class SaveConfigCallback:
    def __init__(self, config, config_filename="config.yaml", overwrite=False):
        self.config = config
        self.config_filename = config_filename
        self.overwrite = overwrite
        self.already_saved = False

    def setup(self, trainer, pl_module, stage):
        if self.already_saved:
            return
        log_dir = trainer.log_dir  # this broadcasts the directory
        config_path = os.path.join(log_dir, self.config_filename)
        if not self.overwrite:
            file_exists = os.path.isfile(config_path) if trainer.is_global_zero else False
            file_exists = trainer.strategy.broadcast(file_exists)
            if file_exists:
                raise RuntimeError(f"{config_path} already exists, aborting to avoid overwriting it")
        if trainer.is_global_zero:
            os.makedirs(log_dir, exist_ok=True)
            with open(config_path, "w") as f:
                json.dump(self.config, f)
            self.already_saved = True


class LinearRegression:
    def __init__(self, lr):
        self.params = {"w": jnp.zeros(4), "b": jnp.zeros(())}
        self.lr = lr
        self._loss = jax.jit(lambda p, x, y: jnp.mean((x @ p["w"] + p["b"] - y) ** 2))
        self._grad = jax.jit(jax.grad(lambda p, x, y: jnp.mean((x @ p["w"] + p["b"] - y) ** 2)))

    def loss(self, x, y):
        return float(self._loss(self.params, x, y))

    def grad(self, x, y):
        return self._grad(self.params, x, y)

    def step(self, grads):
        self.params = {k: self.params[k] - self.lr * grads[k] for k in self.params}


def make_data(rank, n_batches=6, bs=8):
    rng = np.random.default_rng(7 + rank)
    true_w = np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32)
    xs = rng.normal(size=(n_batches, bs, 4)).astype(np.float32)
    return [(x, x @ true_w + 0.1) for x in xs]


def main():
    config = {"model": {"lr": 0.05}, "trainer": {"max_epochs": 2}}
    root = multihost_utils.broadcast_one_to_all(np.frombuffer(tempfile.mkdtemp().encode().ljust(128), np.uint8))
    root = np.asarray(root).tobytes().decode().strip()
    trainer = Trainer(root, callbacks=[SaveConfigCallback(config)], max_epochs=config["trainer"]["max_epochs"])
    model = LinearRegression(config["model"]["lr"])
    trainer.fit(model, make_data(jax.process_index()))
    logged = trainer.test(model, make_data(100 + jax.process_index(), n_batches=2))
    print("RESULT train_loss", round(logged["train_loss"], 5))
    print("RESULT test_loss", round(logged["test_loss"], 5))


if __name__ == "__main__":
    main()
