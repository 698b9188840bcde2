# Keras-style fit loop: TensorBoard callback on every worker (gradient histograms), only worker 0 writes
# Source: https://github.com/horovod/horovod/issues/742
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def allreduce_mean(tree):
    return {k: np.asarray(multihost_utils.process_allgather(np.asarray(v))).mean(axis=0) for k, v in tree.items()}


def loss_fn(params, x, y):
    h = jax.nn.relu(x @ params["dense1"])
    logits = h @ params["dense2"]
    return -jnp.mean(jnp.sum(jax.nn.log_softmax(logits) * y, axis=1))


class DistributedOptimizer:
    """SGD whose gradients are averaged over all workers (hvd.DistributedOptimizer)."""

    def __init__(self, lr):
        self.lr = lr
        self._grad = jax.jit(jax.value_and_grad(loss_fn))

    def get_gradients(self, params, x, y):
        loss, grads = self._grad(params, x, y)
        return float(loss), allreduce_mean(grads)

    def apply(self, params, grads):
        return {k: params[k] - self.lr * grads[k] for k in params}


class Callback:
    def on_train_begin(self, model):
        pass

    def on_epoch_end(self, model, epoch, logs):
        pass


class BroadcastGlobalVariablesCallback(Callback):
    def __init__(self, root_rank):
        self.root_rank = root_rank

    def on_train_begin(self, model):
        model.params = {k: np.asarray(multihost_utils.broadcast_one_to_all(np.asarray(v))) for k, v in model.params.items()}


class TensorBoard(Callback):
    def __init__(self, log_dir, histogram_freq=0, write_grads=False):
        self.log_dir, self.histogram_freq, self.write_grads = log_dir, histogram_freq, write_grads

    def on_epoch_end(self, model, epoch, logs):
        summary = {"epoch": epoch, **logs}
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            x_val, y_val = model.validation_data
            for name, w in model.params.items():
                summary[f"{name}/hist"] = np.histogram(np.asarray(w), bins=8)[0].tolist()
            if self.write_grads:
                _, grads = model.optimizer.get_gradients(model.params, x_val, y_val)
                for name, g in grads.items():
                    summary[f"{name}_grad/hist"] = np.histogram(g, bins=8)[0].tolist()
        if self.log_dir:
            with open(os.path.join(self.log_dir, "events.jsonl"), "a") as f:
                f.write(json.dumps(summary) + "\n")


class ModelCheckpoint(Callback):
    def __init__(self, filepath):
        self.filepath = filepath

    def on_epoch_end(self, model, epoch, logs):
        np.savez(self.filepath.format(epoch=epoch), **{k: np.asarray(v) for k, v in model.params.items()})


class Model:
    def __init__(self, params, optimizer):
        self.params, self.optimizer, self.validation_data = params, optimizer, None

    def fit(self, x, y, epochs, batch_size, validation_data, callbacks):
        self.validation_data = validation_data
        for cb in callbacks:
            cb.on_train_begin(self)
        for epoch in range(epochs):
            losses = []
            for start in range(0, len(x) - batch_size + 1, batch_size):
                loss, grads = self.optimizer.get_gradients(self.params, x[start:start + batch_size], y[start:start + batch_size])
                self.params = self.optimizer.apply(self.params, grads)
                losses.append(loss)
            logs = {"loss": float(np.mean(losses))}
            for cb in callbacks:
                cb.on_epoch_end(self, epoch, logs)
        return logs


def get_data(rank, n, seed):
    rng = np.random.default_rng(seed + rank)
    x = rng.normal(size=(n, 12)).astype(np.float32)
    labels = (x[:, 0] + x[:, 1] > 0).astype(int) + (x[:, 2] > 1).astype(int)
    return x, np.eye(3, dtype=np.float32)[labels]


def main():
    rank = jax.process_index()
    log_dir = tempfile.mkdtemp(prefix=f"tb-{os.environ.get('JOB_ID', 'local')}-")
    x_train, y_train = get_data(rank, 64, seed=10)
    x_val, y_val = get_data(0, 32, seed=99)
    key = jax.random.PRNGKey(rank)
    params = {"dense1": 0.2 * np.asarray(jax.random.normal(key, (12, 16))),
              "dense2": 0.2 * np.asarray(jax.random.normal(jax.random.fold_in(key, 1), (16, 3)))}
    model = Model(params, DistributedOptimizer(lr=0.2))

    callbacks_list = [BroadcastGlobalVariablesCallback(0),
                      TensorBoard(log_dir=log_dir if rank == 0 else None, histogram_freq=2, write_grads=True)]
    if rank == 0:
        callbacks_list.append(ModelCheckpoint(filepath=os.path.join(log_dir, "weights-{epoch}.npz")))
    logs = model.fit(x_train, y_train, epochs=6, batch_size=16, validation_data=(x_val, y_val), callbacks=callbacks_list)

    checksum = float(sum(np.abs(np.asarray(v)).sum() for v in model.params.values()))
    print("RESULT epochs_completed", 6)
    print("RESULT weights_checksum", round(checksum, 4))


if __name__ == "__main__":
    main()
