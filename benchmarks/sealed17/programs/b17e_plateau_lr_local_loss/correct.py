# Horovod/DALLE-style training loop: ReduceLROnPlateau is stepped with the all-process average loss, so every process keeps the same LR
# Source: https://github.com/lucidrains/DALLE-pytorch/issues/268
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CONFIG = {"learning_rate": 0.2, "factor": 0.5, "patience": 1, "cooldown": 0, "min_lr": 1e-3,
          "steps": 12, "local_batch": 8, "dim": 6}


class ReduceLROnPlateau:
    """Minimal mode='min' plateau scheduler, as torch.optim.lr_scheduler.ReduceLROnPlateau."""

    def __init__(self, lr, factor, patience, cooldown, min_lr):
        self.lr, self.factor, self.patience = lr, factor, patience
        self.cooldown, self.min_lr = cooldown, min_lr
        self.best, self.num_bad, self.cooldown_counter = float("inf"), 0, 0

    def step(self, metric):
        metric = float(metric)
        if metric < self.best * (1 - 1e-4):
            self.best, self.num_bad = metric, 0
        else:
            self.num_bad += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad = 0
        if self.num_bad > self.patience:
            self.lr = max(self.lr * self.factor, self.min_lr)
            self.cooldown_counter, self.num_bad = self.cooldown, 0
        return self.lr


@jax.jit
def train_step(params, x, y, lr):
    def per_example(p):
        h = jnp.tanh(x @ p["w1"] + p["b1"])
        return (h @ p["w2"] - y) ** 2

    def loss_fn(p):
        losses = per_example(p)
        return jnp.mean(losses), losses

    (loss, losses), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
    new = jax.tree.map(lambda p, g: p - lr * g, params, grads)
    return new, loss, losses


def local_mean(global_arr):
    """Mean over the shards this process holds (what `loss` is on one Horovod rank)."""
    parts = [np.asarray(s.data) for s in global_arr.addressable_shards]
    return float(np.mean(np.concatenate(parts)))


def make_batch(rng, pid, cfg):
    x = rng.normal(size=(cfg["local_batch"], cfg["dim"])).astype(np.float32)
    noise = 0.05 if pid == 0 else 1.5  # this rank's shard holds the noisy captions
    y = (np.sin(x[:, 0] * 2.0) + noise * rng.normal(size=cfg["local_batch"])).astype(np.float32)
    return x, y


def main():
    cfg = CONFIG
    mesh = Mesh(np.array(jax.devices()), ("data",))
    rep, batch = NamedSharding(mesh, P()), NamedSharding(mesh, P("data"))
    init = np.random.default_rng(0)
    params = {"w1": init.normal(size=(cfg["dim"], 8)).astype(np.float32) * 0.3,
              "b1": np.zeros(8, np.float32),
              "w2": init.normal(size=(8,)).astype(np.float32) * 0.3}
    params = jax.tree.map(lambda a: jax.device_put(a, rep), params)
    scheduler = ReduceLROnPlateau(cfg["learning_rate"], cfg["factor"], cfg["patience"],
                                  cfg["cooldown"], cfg["min_lr"])
    pid = jax.process_index()
    rng = np.random.default_rng(1234 + pid)
    lr = cfg["learning_rate"]
    lr_history = []
    for step in range(cfg["steps"]):
        x_local, y_local = make_batch(rng, pid, cfg)
        x = jax.make_array_from_process_local_data(batch, x_local)
        y = jax.make_array_from_process_local_data(batch, y_local)
        params, avg_loss, losses = train_step(params, x, y, np.float32(lr))
        loss = local_mean(losses)
        lr = scheduler.step(avg_loss)
        lr_history.append(lr)
    flat = np.concatenate([np.asarray(params[k].addressable_data(0)).ravel() for k in sorted(params)])
    print("RESULT lr_history", lr_history)
    print("RESULT final_avg_loss", round(float(avg_loss), 5))
    print("RESULT param_checksum", round(float(np.sum(flat * np.arange(1, flat.size + 1))), 4))


if __name__ == "__main__":
    main()
