# Sweep-driven training run: the logger's config (sweep values) is broadcast from process 0 to all processes
# Source: https://github.com/borisdayma/lightning-kitti/issues/3
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import hashlib
import itertools
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

hyperparameter_defaults = {"learning_rate": 0.1, "batch_size": 32, "epochs": 2, "hidden": 16}

SWEEP = {
    "method": "grid",
    "parameters": {
        "learning_rate": {"values": [0.01, 0.03, 0.3]},
        "batch_size": {"values": [8, 16]},
        "epochs": {"values": [1, 3]},
    },
}


class SweepController:
    """Stands in for the sweep server: hands the next grid point to the run that registers."""

    def __init__(self, sweep):
        params = sweep["parameters"]
        self.names = sorted(params)
        self.grid = list(itertools.product(*(params[n]["values"] for n in self.names)))

    def assignment(self, run_id):
        index = int(hashlib.md5(run_id.encode()).hexdigest(), 16) % len(self.grid)
        return dict(zip(self.names, self.grid[index]))


class WandbLogger:
    def __init__(self, project, config):
        self.project, self._config, self._experiment = project, dict(config), None

    @property
    def experiment(self):
        if self._experiment is None:
            run_id = os.environ.get("JOB_ID", "local")
            config = dict(self._config)
            config.update(SweepController(SWEEP).assignment(run_id))
            self._experiment = {"id": run_id, "config": config, "history": []}
        return self._experiment

    def log_metrics(self, metrics, step):
        self.experiment["history"].append((step, metrics))


def broadcast_config(config):
    names = sorted(config)
    values = np.asarray(multihost_utils.broadcast_one_to_all(np.array([float(config[k]) for k in names], np.float32)))
    return {k: type(hyperparameter_defaults[k])(v) if isinstance(hyperparameter_defaults[k], int) else float(v)
            for k, v in zip(names, values)}


def load_shard(rank, n=96, dim=8):
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    y = np.sin(x[:, 0]) + 0.5 * x[:, 1]
    return x, y.astype(np.float32)


def init_model(hidden, dim=8):
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    return {"w1": 0.3 * jax.random.normal(k1, (dim, hidden)), "w2": 0.3 * jax.random.normal(k2, (hidden,))}


def mse(params, x, y):
    return jnp.mean((jnp.tanh(x @ params["w1"]) @ params["w2"] - y) ** 2)


grad_fn = jax.jit(jax.value_and_grad(mse))


def fit(config, logger, x, y):
    params = init_model(config["hidden"])
    bs, step = config["batch_size"], 0
    for epoch in range(config["epochs"]):
        for start in range(0, len(x) - bs + 1, bs):
            loss, grads = grad_fn(params, x[start:start + bs], y[start:start + bs])
            grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0) for k, g in grads.items()}
            params = {k: params[k] - config["learning_rate"] * grads[k] for k in params}
            step += 1
        epoch_loss = float(np.mean(multihost_utils.process_allgather(np.float32(mse(params, x, y)))))
        if logger is not None:
            logger.log_metrics({"train_loss": epoch_loss, "epoch": epoch}, step)
    return params, step, epoch_loss


def main():
    rank = jax.process_index()
    logger = None
    config = dict(hyperparameter_defaults)
    if rank == 0:
        logger = WandbLogger(project="kitti-seg", config=hyperparameter_defaults)
        config = logger.experiment["config"]
    config = broadcast_config(config)
    x, y = load_shard(rank)
    params, steps, loss = fit(config, logger, x, y)
    print("RESULT config", sorted(config.items()))
    print("RESULT optimizer_steps", steps)
    print("RESULT final_train_loss", round(loss, 5))


if __name__ == "__main__":
    main()
