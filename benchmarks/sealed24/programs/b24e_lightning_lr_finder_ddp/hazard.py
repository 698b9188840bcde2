import os
import pickle
import tempfile
import uuid

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class DDPStrategy:
    def __init__(self):
        self.global_rank = jax.process_index()
        self.world_size = jax.process_count()

    def barrier(self, name):
        multihost_utils.sync_global_devices(name)

    def broadcast(self, obj, src=0):
        payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
        size = int(multihost_utils.broadcast_one_to_all(np.int32(payload.size)))
        buf = np.zeros(size, np.uint8)
        buf[:min(size, payload.size)] = payload[:size]
        return pickle.loads(np.asarray(multihost_utils.broadcast_one_to_all(buf)).tobytes())

    def reduce_grads(self, grads):
        return jax.tree_util.tree_map(
            lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), grads)


class Trainer:
    def __init__(self, default_root_dir):
        self.strategy = DDPStrategy()
        self.default_root_dir = default_root_dir
        self.should_stop = False

    @property
    def log_dir(self):
        dirpath = os.path.join(self.default_root_dir, "lightning_logs")
        return self.strategy.broadcast(dirpath)

    def save_checkpoint(self, path, params):
        if self.strategy.global_rank == 0:
            np.savez(path, **{k: np.asarray(v) for k, v in params.items()})
        self.strategy.barrier("save_checkpoint")


class RegressionModel:
    def __init__(self, rank, features=4, lr=1e-3):
        rng = np.random.default_rng(7 + rank)
        scale = np.ones(features, np.float32)
        scale[0] = 5.0 if rank == 0 else 0.0
        self.x = (rng.normal(size=(64, features)) * scale).astype(np.float32)
        self.y = (self.x @ np.arange(1, features + 1, dtype=np.float32)).astype(np.float32)
        self.params = {"w": jnp.zeros(features), "b": jnp.zeros(())}
        self.lr = lr
        self._grad = jax.jit(jax.value_and_grad(self._loss))

    @staticmethod
    def _loss(params, x, y):
        return jnp.mean((x @ params["w"] + params["b"] - y) ** 2)

    def training_step(self, step):
        idx = np.arange(step * 8, step * 8 + 8) % len(self.x)
        return self._grad(self.params, self.x[idx], self.y[idx])


class _LRFinder:
    def __init__(self, min_lr, max_lr, num_training):
        self.lr_min, self.lr_max, self.num_training = min_lr, max_lr, num_training
        self.results = {"lr": [], "loss": []}

    def lr_at(self, step):
        r = (step + 1) / self.num_training
        return self.lr_min * (self.lr_max / self.lr_min) ** r

    def suggestion(self, skip_begin=3, skip_end=1):
        losses = np.array(self.results["loss"][skip_begin:-skip_end])
        if len(losses) < 2:
            return None
        return self.results["lr"][skip_begin + int(np.argmin(np.gradient(losses)))]


class _LRCallback:
    def __init__(self, beta=0.98, early_stop_threshold=4.0):
        self.beta = beta
        self.early_stop_threshold = early_stop_threshold
        self.avg_loss = 0.0
        self.best_loss = 0.0

    def on_train_batch_end(self, trainer, finder, current_step, lr, loss):
        self.avg_loss = self.beta * self.avg_loss + (1 - self.beta) * loss
        smoothed_loss = self.avg_loss / (1 - self.beta ** current_step)
        if self.early_stop_threshold is not None:
            if current_step > 1 and smoothed_loss > self.early_stop_threshold * self.best_loss:
                trainer.should_stop = True
        if smoothed_loss < self.best_loss or current_step == 1:
            self.best_loss = smoothed_loss
        finder.results["lr"].append(lr)
        finder.results["loss"].append(smoothed_loss)


def lr_find(trainer, model, min_lr=1e-5, max_lr=1.0, num_training=40):
    ckpt_path = os.path.join(trainer.default_root_dir, f".lr_find_{uuid.uuid4()}.npz")
    trainer.save_checkpoint(ckpt_path, model.params)

    finder = _LRFinder(min_lr, max_lr, num_training)
    callback = _LRCallback()
    for step in range(num_training):
        lr = finder.lr_at(step)
        loss, grads = model.training_step(step)
        grads = trainer.strategy.reduce_grads(grads)
        model.params = jax.tree_util.tree_map(lambda p, g: p - lr * g, model.params, grads)
        callback.on_train_batch_end(trainer, finder, step + 1, lr, float(loss))
        if trainer.should_stop:
            break

    lr = finder.suggestion()
    with np.load(ckpt_path) as ckpt:
        model.params = {k: jnp.asarray(ckpt[k]) for k in ckpt.files}
    trainer.strategy.barrier("lr_find_restore")
    if trainer.strategy.global_rank == 0:
        os.remove(ckpt_path)
    trainer.should_stop = False
    return finder, lr


def fit(trainer, model, steps=20):
    for step in range(steps):
        _, grads = model.training_step(step)
        grads = trainer.strategy.reduce_grads(grads)
        model.params = jax.tree_util.tree_map(lambda p, g: p - model.lr * g, model.params, grads)


def main():
    root = os.path.join(tempfile.gettempdir(), f"lr_find_{os.environ.get('JOB_ID', 'local')}")
    os.makedirs(root, exist_ok=True)
    trainer = Trainer(default_root_dir=root)
    print(f"rank {trainer.strategy.global_rank}: logging to {trainer.log_dir}")
    model = RegressionModel(trainer.strategy.global_rank)
    finder, suggested = lr_find(trainer, model)
    model.lr = suggested
    print(f"rank {trainer.strategy.global_rank}: lr finder ran {len(finder.results['lr'])} steps, suggested lr {suggested}")
    fit(trainer, model)
    w = np.asarray(multihost_utils.process_allgather(np.asarray(model.params["w"])))
    print("RESULT lr_find_steps", len(finder.results["lr"]))
    print("RESULT suggested_lr", f"{suggested:.6g}")
    print("RESULT weights", np.round(w[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
