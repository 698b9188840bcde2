# Lightning-style Trainer: EarlyStopping's stop decision is reduced across all workers before it is applied
# Source: https://github.com/Lightning-AI/pytorch-lightning/issues/3381
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class HorovodStrategy:
    def __init__(self):
        self.global_rank, self.world_size = jax.process_index(), jax.process_count()

    def allreduce(self, tree):
        return {k: np.asarray(multihost_utils.process_allgather(np.asarray(v))).mean(axis=0) for k, v in tree.items()}

    def reduce_boolean_decision(self, decision):
        flags = np.asarray(multihost_utils.process_allgather(np.int32(decision)))
        return bool(flags.any())


class EarlyStopping:
    def __init__(self, monitor="val_loss", min_delta=0.0, patience=2, mode="min"):
        self.monitor, self.min_delta, self.patience, self.mode = monitor, min_delta, patience, mode
        self.wait_count, self.best_score, self.stopped_epoch = 0, np.inf, 0

    def on_validation_end(self, trainer, metrics):
        current = metrics[self.monitor]
        if current < self.best_score - self.min_delta:
            self.best_score, self.wait_count = current, 0
            should_stop = False
        else:
            self.wait_count += 1
            should_stop = self.wait_count >= self.patience
        should_stop = trainer.strategy.reduce_boolean_decision(should_stop)
        if should_stop:
            self.stopped_epoch = trainer.current_epoch
        trainer.should_stop = trainer.should_stop or should_stop


class BoringModel:
    def __init__(self, dim=6, hidden=12):
        k1, k2 = jax.random.split(jax.random.PRNGKey(3))
        self.params = {"w1": 0.4 * jax.random.normal(k1, (dim, hidden)), "w2": 0.4 * jax.random.normal(k2, (hidden,))}
        self.lr = 0.25

    @staticmethod
    def loss(params, x, y):
        pred = jnp.tanh(x @ params["w1"]) @ params["w2"]
        return jnp.mean((pred - y) ** 2)


grad_fn = jax.jit(jax.value_and_grad(BoringModel.loss))
val_fn = jax.jit(BoringModel.loss)


class Trainer:
    def __init__(self, max_epochs, callbacks, strategy):
        self.max_epochs, self.callbacks, self.strategy = max_epochs, callbacks, strategy
        self.current_epoch, self.should_stop, self.global_step = 0, False, 0

    def fit(self, model, train_data, val_data):
        x, y = train_data
        for epoch in range(self.max_epochs):
            self.current_epoch = epoch
            for start in range(0, len(x), 16):
                _, grads = grad_fn(model.params, x[start:start + 16], y[start:start + 16])
                grads = self.strategy.allreduce(grads)
                model.params = {k: model.params[k] - model.lr * grads[k] for k in model.params}
                self.global_step += 1
            metrics = {"val_loss": float(val_fn(model.params, *val_data))}
            for cb in self.callbacks:
                cb.on_validation_end(self, metrics)
            if self.should_stop:
                break
        return self.current_epoch


def make_data(rank, n, seed):
    rng = np.random.default_rng(seed + 31 * rank)
    x = rng.normal(size=(n, 6)).astype(np.float32)
    y = (np.sin(2 * x[:, 0]) + 0.5 * x[:, 1] * x[:, 2] + 0.3 * rng.normal(size=n)).astype(np.float32)
    return x, y


def main():
    strategy = HorovodStrategy()
    rank = strategy.global_rank
    train_data, val_data = make_data(rank, 64, seed=5), make_data(rank, 16, seed=6)
    model = BoringModel()
    trainer = Trainer(max_epochs=30, callbacks=[EarlyStopping(monitor="val_loss", patience=2)], strategy=strategy)
    last_epoch = trainer.fit(model, train_data, val_data)
    checksum = float(sum(jnp.sum(jnp.abs(v)) for v in model.params.values()))
    print("RESULT last_epoch", last_epoch)
    print("RESULT global_step", trainer.global_step)
    print("RESULT params_checksum", round(checksum, 4))


if __name__ == "__main__":
    main()
