# A benchmark-eval callback computes its accuracy on the main process and broadcasts it before early stopping
# Source: https://github.com/axolotl-ai-cloud/axolotl/pull/537
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import dataclasses
import os
import pickle

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

FEATURES, CHOICES = 4, 4


def is_main_process() -> bool:
    return jax.process_index() == 0


def broadcast_dict(vals: dict) -> dict:
    """Main process pickles its dict; every process receives the same bytes."""
    data = np.frombuffer(pickle.dumps(vals), np.uint8) if is_main_process() else np.zeros(0, np.uint8)
    size = int(multihost_utils.broadcast_one_to_all(np.int32(len(data))))
    buf = np.zeros(size, np.uint8)
    buf[:len(data)] = data[:size]
    buf = np.asarray(multihost_utils.broadcast_one_to_all(buf))
    return pickle.loads(buf.tobytes())  # nosec


@dataclasses.dataclass
class TrainerControl:
    should_training_stop: bool = False


@dataclasses.dataclass
class TrainerState:
    global_step: int = 0
    best_metric: float | None = None


class BenchEvalCallback:
    def __init__(self, trainer, bench_split: str = "eval"):
        self.trainer = trainer
        self.bench_split = bench_split
        rng = np.random.default_rng(11)
        self.x = rng.normal(size=(8, FEATURES)).astype(np.float32)
        self.refs = rng.integers(0, CHOICES, size=8)

    def on_evaluate(self, state, control, metrics: dict):
        lo = jax.process_index() * 4
        local_preds = np.asarray(self.trainer.predict(self.x[lo:lo + 4]))
        all_preds = np.asarray(multihost_utils.process_allgather(local_preds)).reshape(-1)
        results = {}
        if is_main_process():
            results[f"{self.bench_split}_bench_total_accuracy"] = float(np.mean(all_preds == self.refs))
        results = broadcast_dict(results)
        for key, val in results.items():
            metrics[key] = val


class EarlyStoppingCallback:
    def __init__(self, metric: str, patience: int):
        self.metric = metric
        self.patience = patience
        self.patience_counter = 0

    def on_evaluate(self, state, control, metrics: dict):
        value = metrics.get(self.metric)
        if value is None:
            return  # "early stopping required metric_for_best_model, but did not find it": keep training
        if state.best_metric is None or value > state.best_metric:
            state.best_metric, self.patience_counter = value, 0
        else:
            self.patience_counter += 1
        if self.patience_counter >= self.patience:
            control.should_training_stop = True


class Trainer:
    def __init__(self, mesh, eval_steps: int, max_steps: int):
        self.sharding = NamedSharding(mesh, P("data"))
        self.w = jnp.zeros((FEATURES, CHOICES), jnp.float32)
        self.eval_steps, self.max_steps = eval_steps, max_steps
        self.state, self.control = TrainerState(), TrainerControl()
        self.callbacks = [BenchEvalCallback(self), EarlyStoppingCallback("eval_bench_total_accuracy", 1)]
        self._train = jax.jit(lambda w, x: w - 1e-4 * jnp.mean(x) * jnp.ones_like(w))
        self._predict = jax.jit(lambda w, x: jnp.argmax(x @ w, axis=-1))

    def predict(self, x):
        return self._predict(self.w, x)

    def evaluate(self) -> dict:
        metrics = {"eval_loss": 0.0}
        for cb in self.callbacks:
            cb.on_evaluate(self.state, self.control, metrics)
        return metrics

    def train(self):
        rng = np.random.default_rng(5 + jax.process_index())
        while self.state.global_step < self.max_steps and not self.control.should_training_stop:
            local = rng.normal(size=(2, FEATURES)).astype(np.float32)
            self.w = self._train(self.w, jax.make_array_from_process_local_data(self.sharding, local))
            self.state.global_step += 1
            if self.state.global_step % self.eval_steps == 0:
                self.evaluate()
        return self.state.global_step


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    trainer = Trainer(mesh, eval_steps=2, max_steps=8)
    steps = trainer.train()
    print("RESULT", f"steps={steps} best={trainer.state.best_metric}")
    print("RESULT", f"w_sum={float(jnp.sum(trainer.w)):.6f}")


if __name__ == "__main__":
    main()
