import os
import pickle
import tempfile
from collections import OrderedDict

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Accuracy:
    """Metric with `sum` states; like torchmetrics>=0.4 it syncs its states when state_dict() is taken."""

    def __init__(self, dist_sync_on_state_dict=True):
        self._defaults = {"correct": np.zeros((), np.float32), "total": np.zeros((), np.float32)}
        self.correct = self._defaults["correct"].copy()
        self.total = self._defaults["total"].copy()
        self.dist_sync_on_state_dict = dist_sync_on_state_dict

    def update(self, preds, target):
        self.correct = self.correct + np.float32((preds == target).sum())
        self.total = self.total + np.float32(target.size)

    def _sync_dist(self):
        out = {}
        for name in self._defaults:
            gathered = multihost_utils.process_allgather(np.asarray(getattr(self, name)))
            out[name] = np.asarray(gathered).sum(0)
        return out

    def compute(self):
        states = self._sync_dist()
        return float(states["correct"] / max(states["total"], 1.0))

    def state_dict(self, prefix=""):
        states = self._sync_dist() if self.dist_sync_on_state_dict else {
            k: getattr(self, k) for k in self._defaults}
        return OrderedDict((prefix + k, np.asarray(v)) for k, v in states.items())


class IrisClassifier:
    def __init__(self, in_features=4, num_classes=3, lr=0.2):
        self.params = {"w": jnp.zeros((in_features, num_classes)), "b": jnp.zeros(num_classes)}
        self.lr = lr
        self.train_acc = Accuracy()
        self._step = jax.jit(jax.value_and_grad(self._loss))

    @staticmethod
    def _loss(params, x, y):
        logits = x @ params["w"] + params["b"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def training_step(self, batch):
        x, y = batch
        loss, grads = self._step(self.params, x, y)
        preds = np.asarray(jnp.argmax(x @ self.params["w"] + self.params["b"], axis=1))
        self.train_acc.update(preds, y)
        return loss, grads

    def state_dict(self):
        sd = OrderedDict(("layer." + k, np.asarray(v)) for k, v in self.params.items())
        sd.update(self.train_acc.state_dict(prefix="train_acc."))
        return sd


class Trainer:
    def __init__(self, max_epochs=3):
        self.max_epochs = max_epochs
        self.global_rank = jax.process_index()

    def fit(self, model, loader):
        for _ in range(self.max_epochs):
            for batch in loader:
                loss, grads = model.training_step(batch)
                grads = jax.tree_util.tree_map(
                    lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), grads)
                model.params = jax.tree_util.tree_map(lambda p, g: p - model.lr * g, model.params, grads)


def iris_like_loader(rank, n=48, batch_size=12):
    rng = np.random.default_rng(7 + rank)
    y = rng.integers(0, 3, size=n).astype(np.int32)
    centers = np.array([[5.0, 3.4, 1.5, 0.2], [5.9, 2.8, 4.3, 1.3], [6.6, 3.0, 5.5, 2.0]], np.float32)
    x = centers[y] + rng.normal(scale=0.3, size=(n, 4)).astype(np.float32)
    x = (x - x.mean(0)) / x.std(0)
    return [(x[i:i + batch_size], y[i:i + batch_size]) for i in range(0, n, batch_size)]


def main():
    trainer = Trainer(max_epochs=3)
    model = IrisClassifier()
    trainer.fit(model, iris_like_loader(trainer.global_rank))

    ckpt_path = os.path.join(tempfile.gettempdir(), f"iris_{os.environ.get('JOB_ID', 'local')}.pkl")
    if trainer.global_rank == 0:
        with open(ckpt_path, "wb") as f:
            pickle.dump(model.state_dict(), f)
        print("saved", ckpt_path)

    w = np.asarray(multihost_utils.process_allgather(np.asarray(model.params["w"])))
    acc = model.train_acc.compute()
    multihost_utils.sync_global_devices("end_of_run")
    if trainer.global_rank == 0:
        os.remove(ckpt_path)
    print("RESULT train_acc", round(acc, 4))
    print("RESULT weights_checksum", round(float(w[0].sum()), 4))
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))


if __name__ == "__main__":
    main()
