# Early stopping reads an eval metric each process computed from its own, ungathered predictions
# Source: https://github.com/huggingface/transformers/issues/17478
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TRUE_W = np.array([1.0, -2.0, 0.5], np.float32)


@dataclass
class TrainingArguments:
    num_epochs: int = 8
    steps_per_epoch: int = 3
    lr: float = 0.05
    patience: int = 2
    threshold: float = 1e-3


class EarlyStoppingCallback:
    def __init__(self, patience, threshold):
        self.patience, self.threshold = patience, threshold
        self.best, self.bad_evals = None, 0

    def on_evaluate(self, control, metrics):
        score = metrics["eval_mse"]
        if self.best is None or score < self.best - self.threshold:
            self.best, self.bad_evals = score, 0
        else:
            self.bad_evals += 1
        if self.bad_evals >= self.patience:
            control["should_training_stop"] = True


class Trainer:
    def __init__(self, args, callback):
        self.args, self.callback = args, callback
        self.mesh = Mesh(np.array(jax.devices()), ("data",))
        self.rows = NamedSharding(self.mesh, P("data"))
        self.params = jax.device_put(np.zeros(3, np.float32), NamedSharding(self.mesh, P()))
        self._train = jax.jit(lambda w, x, y, lr: w - lr * jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w))
        self._predict = jax.jit(lambda w, x: x @ w)
        rng = np.random.default_rng(7 + jax.process_index())
        self.eval_x = rng.normal(size=(6, 3)).astype(np.float32)
        flip = 1.0 if jax.process_index() == 0 else -1.0  # process 1's eval shard holds sign-flipped labels
        self.eval_y = flip * (self.eval_x @ TRUE_W)

    def global_batch(self, local):
        return jax.make_array_from_process_local_data(self.rows, local)

    def evaluate(self):
        preds = self._predict(self.params, self.global_batch(self.eval_x))
        local_preds = np.asarray(multihost_utils.global_array_to_host_local_array(preds, self.mesh, P("data")))
        return {"eval_mse": float(np.mean((local_preds - self.eval_y) ** 2))}

    def train(self):
        control = {"should_training_stop": False}
        epochs_run = 0
        for epoch in range(self.args.num_epochs):
            for step in range(self.args.steps_per_epoch):
                rng = np.random.default_rng(1000 * epoch + 10 * step + jax.process_index())
                x = rng.normal(size=(4, 3)).astype(np.float32)
                self.params = self._train(self.params, self.global_batch(x), self.global_batch(x @ TRUE_W),
                                          self.args.lr)
            epochs_run += 1
            self.callback.on_evaluate(control, self.evaluate())
            if control["should_training_stop"]:
                break
        multihost_utils.sync_global_devices("train_end")
        return epochs_run


def main():
    args = TrainingArguments()
    trainer = Trainer(args, EarlyStoppingCallback(args.patience, args.threshold))
    epochs = trainer.train()
    print("RESULT epochs_run", epochs)
    print("RESULT params", np.round(np.asarray(trainer.params.addressable_data(0)), 4).tolist())


if __name__ == "__main__":
    main()
