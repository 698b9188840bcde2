import operator
import os
import pathlib
import shutil
import tempfile
from dataclasses import dataclass
from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def is_last_rank():
    return jax.process_index() == jax.process_count() - 1


@dataclass
class Args:
    save: str
    train_iters: int = 8
    eval_interval: int = 2
    save_total_limit: int = 1
    metric_for_best_model: str = "loss"
    greater_is_better: bool = False


@dataclass
class TrainerState:
    iteration: int = 0
    best_metric: Optional[float] = None
    best_global_step: Optional[int] = None


class MegatronTrainer:
    def __init__(self, args, train_data, eval_data):
        self.args, self.state = args, TrainerState()
        self.train_data, self.eval_data = train_data, eval_data
        self.params = {"w": jnp.zeros(train_data[0][0].shape[-1])}
        self._grad = jax.jit(jax.value_and_grad(lambda p, x, y: jnp.mean((x @ p["w"] - y) ** 2)))

    def lr(self, it):
        return 0.3 if it <= 4 else 1.3

    def train_step(self, x, y):
        _, g = self._grad(self.params, x, y)
        g = np.asarray(multihost_utils.process_allgather(np.asarray(g["w"]))).mean(0)
        self.params = {"w": self.params["w"] - self.lr(self.state.iteration) * g}

    def evaluate(self):
        x, y = self.eval_data
        local = np.float32(jnp.mean((x @ self.params["w"] - y) ** 2))
        losses = np.asarray(multihost_utils.process_allgather(local))
        return {"loss": float(losses.mean())} if is_last_rank() else None

    def _determine_best_metric(self, metrics):
        args, state = self.args, self.state
        tensor = np.zeros(3, dtype=np.float32)
        if (args.metric_for_best_model is not None and metrics is not None and is_last_rank()
                and args.metric_for_best_model in metrics):
            metric_value = metrics[args.metric_for_best_model]
            op = operator.gt if args.greater_is_better else operator.lt
            is_new_best = state.best_metric is None or op(metric_value, state.best_metric)
            if is_new_best:
                state.best_metric, state.best_global_step = metric_value, state.iteration
            tensor[:] = [state.best_metric, state.best_global_step, float(is_new_best)]
        tensor = np.asarray(multihost_utils.process_allgather(tensor)).sum(0)
        state.best_metric, state.best_global_step = float(tensor[0]), int(tensor[1])
        return bool(tensor[2])

    def save_checkpoint(self):
        ckpt = pathlib.Path(self.args.save) / f"checkpoint-{self.state.iteration}"
        ckpt.mkdir(parents=True, exist_ok=True)
        np.save(ckpt / f"model_rank{jax.process_index()}.npy", np.asarray(self.params["w"]))
        multihost_utils.sync_global_devices(f"save {self.state.iteration}")
        self._rotate_checkpoints()

    def _rotate_checkpoints(self):
        ckpts = sorted(pathlib.Path(self.args.save).glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
        keep = set(ckpts[-self.args.save_total_limit:])
        if self.state.best_global_step is not None:
            keep.add(pathlib.Path(self.args.save) / f"checkpoint-{self.state.best_global_step}")
        for ckpt in ckpts:
            if ckpt not in keep:
                (ckpt / f"model_rank{jax.process_index()}.npy").unlink(missing_ok=True)
        multihost_utils.sync_global_devices(f"rotate {self.state.iteration}")

    def train(self):
        while self.state.iteration < self.args.train_iters:
            x, y = self.train_data[self.state.iteration % len(self.train_data)]
            self.state.iteration += 1
            self.train_step(x, y)
            if self.state.iteration % self.args.eval_interval == 0:
                self._determine_best_metric(self.evaluate())
                self.save_checkpoint()

    def load_best_model_at_end(self):
        step = self.state.best_global_step or self.state.iteration
        path = pathlib.Path(self.args.save) / f"checkpoint-{step}" / f"model_rank{jax.process_index()}.npy"
        self.params = {"w": jnp.asarray(np.load(path))}
        return step


def main():
    rank = jax.process_index()
    save = pathlib.Path(tempfile.gettempdir()) / f"swift_{os.environ.get('JOB_ID', 'local')}"
    rng = np.random.default_rng(5 + rank)
    true_w = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    xs = rng.normal(size=(4, 16, 3)).astype(np.float32)
    train_data = [(x, x @ true_w) for x in xs]
    ex = rng.normal(size=(32, 3)).astype(np.float32)
    trainer = MegatronTrainer(Args(save=str(save)), train_data, (ex, ex @ true_w))
    trainer.train()
    step = trainer.load_best_model_at_end()
    w = np.asarray(multihost_utils.process_allgather(np.asarray(trainer.params["w"])))
    print("RESULT best_checkpoint", step)
    print("RESULT weights", np.round(w[0], 4).tolist())
    print("RESULT replicas_in_sync", bool(np.allclose(w, w[0])))
    multihost_utils.sync_global_devices("done")
    if rank == 0:
        shutil.rmtree(save, ignore_errors=True)


if __name__ == "__main__":
    main()
