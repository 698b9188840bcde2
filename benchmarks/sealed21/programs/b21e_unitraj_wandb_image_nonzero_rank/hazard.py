import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class wandb:
    """Minimal stand-in for the wandb client: a run exists only where init() was called."""

    class Error(Exception):
        pass

    run = None

    @classmethod
    def init(cls, project, config):
        cls.run = {"project": project, "config": dict(config), "history": []}
        return cls.run

    @classmethod
    def log(cls, data):
        if cls.run is None:
            raise cls.Error("You must call wandb.init() before wandb.log()")
        cls.run["history"].append(data)

    @staticmethod
    def Image(arr):
        return {"image": np.asarray(arr).shape}


class WandbLogger:
    def __init__(self, project, config):
        self.project, self.config = project, config

    def setup(self, global_rank):
        if global_rank == 0:
            wandb.init(project=self.project, config=self.config)


def visualize_prediction(batch, prediction):
    traj = np.asarray(prediction)[0]
    canvas = np.zeros((32, 32), np.float32)
    idx = np.clip(((traj + 3.0) / 6.0 * 31).astype(int), 0, 31)
    canvas[idx[:, 1], idx[:, 0]] = 1.0
    return canvas


class BaseModel:
    def __init__(self, config, rank):
        self.config, self.local_rank = config, rank
        self.params = {"w": jnp.zeros((config["in_dim"], config["out_steps"] * 2))}
        self._loss_and_grad = jax.jit(jax.value_and_grad(self._loss, has_aux=True))
        self.logged = {}

    @staticmethod
    def _loss(params, x, y):
        pred = (x @ params["w"]).reshape(y.shape)
        ade = jnp.mean(jnp.linalg.norm(pred - y, axis=-1))
        fde = jnp.mean(jnp.linalg.norm(pred[:, -1] - y[:, -1], axis=-1))
        return ade, (pred, {"ade": ade, "fde": fde})

    def log(self, name, value, sync_dist=False):
        if sync_dist:
            value = float(np.asarray(multihost_utils.process_allgather(np.float32(value))).mean())
        self.logged[name] = value

    def log_info(self, batch, batch_idx, prediction, loss_dict, status="train"):
        for k, v in loss_dict.items():
            self.log(status + "/" + k, float(v), sync_dist=True)
        if status == "val" and batch_idx == 0 and not self.config["debug"]:
            img = visualize_prediction(batch, prediction)
            wandb.log({"prediction": [wandb.Image(img)]})

    def training_step(self, batch, batch_idx):
        (loss, (pred, loss_dict)), grads = self._loss_and_grad(self.params, *batch)
        g = np.asarray(multihost_utils.process_allgather(np.asarray(grads["w"]))).mean(0)
        self.params = {"w": self.params["w"] - self.config["lr"] * g}
        self.log_info(batch, batch_idx, pred, loss_dict, status="train")

    def validation_step(self, batch, batch_idx):
        _, (pred, loss_dict) = self._loss(self.params, *batch)
        self.log_info(batch, batch_idx, pred, loss_dict, status="val")


def make_batches(rank, n, seed, in_dim=6, steps=4, bs=8):
    rng = np.random.default_rng(seed + rank)
    out = []
    for _ in range(n):
        x = rng.normal(size=(bs, in_dim)).astype(np.float32)
        y = np.cumsum(0.3 * x[:, None, :2] + 0.1 * rng.normal(size=(bs, steps, 2)), axis=1).astype(np.float32)
        out.append((x, y))
    return out


def main():
    rank = jax.process_index()
    config = {"in_dim": 6, "out_steps": 4, "lr": 0.05, "debug": False, "max_epochs": 2}
    logger = WandbLogger("unitraj", config)
    logger.setup(rank)
    model = BaseModel(config, rank)
    train, val = make_batches(rank, 6, 10), make_batches(rank, 3, 50)
    for epoch in range(config["max_epochs"]):
        for i, batch in enumerate(train):
            model.training_step(batch, i)
        for i, batch in enumerate(val):
            model.validation_step(batch, i)
        print(f"rank {rank} epoch {epoch} val/ade {model.logged['val/ade']:.4f}")
    print("RESULT val_ade", round(model.logged["val/ade"], 4))
    print("RESULT val_fde", round(model.logged["val/fde"], 4))
    print("RESULT train_ade", round(model.logged["train/ade"], 4))


if __name__ == "__main__":
    main()
