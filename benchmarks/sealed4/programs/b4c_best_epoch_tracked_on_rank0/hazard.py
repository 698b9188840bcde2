# Early stopping: only the rank-0 worker records the best epoch, so other workers stop after `early_stop_after` epochs
# Source: https://github.com/facebookresearch/pytext/pull/585
# Written for the mcjax sealed4 evaluation (not copied): a port of a PyText (torch.distributed) trainer bug to
# multi-controller JAX; run as 2 processes by benchmarks/sealed4/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
BATCH = NamedSharding(MESH, P("data"))
REPLICATED = NamedSharding(MESH, P())


@dataclasses.dataclass
class TrainingState:
    params: jax.Array
    epoch: int = 0
    best_model_metric: float = float("inf")
    epochs_since_last_improvement: int = 0


@dataclasses.dataclass
class TrainerConfig:
    epochs: int = 8
    early_stop_after: int = 2
    learning_rate: float = 0.05


@jax.jit
def train_step(params, x, y):
    def loss_fn(p):
        return jnp.mean((x @ p - y) ** 2)
    loss, grad = jax.value_and_grad(loss_fn)(params)
    return params - 0.05 * grad, loss


@jax.jit
def eval_loss(params, x, y):
    return jnp.mean((x @ params - y) ** 2)


def make_batches(seed: int, n: int):
    rng = np.random.default_rng(seed + 1000 * jax.process_index())
    true_w = np.linspace(-1.0, 1.0, 8).astype(np.float32)
    for _ in range(n):
        x = rng.normal(size=(16, 8)).astype(np.float32)
        y = x @ true_w
        yield (jax.make_array_from_process_local_data(BATCH, x),
               jax.make_array_from_process_local_data(BATCH, y))


class Trainer:
    def __init__(self, config: TrainerConfig, rank: int):
        self.config = config
        self.rank = rank

    def is_better(self, metric: float, best: float) -> bool:
        return metric < best

    def save_best_model(self, state: TrainingState) -> None:
        print(f"rank {self.rank}: new best model at epoch {state.epoch}")

    def on_epoch_end(self, state: TrainingState, eval_metric: float) -> None:
        state.epochs_since_last_improvement += 1
        if self.rank == 0 and self.is_better(eval_metric, state.best_model_metric):
            state.best_model_metric = eval_metric
            state.epochs_since_last_improvement = 0
            self.save_best_model(state)

    def should_stop(self, state: TrainingState) -> bool:
        return state.epochs_since_last_improvement >= self.config.early_stop_after

    def train(self, state: TrainingState) -> TrainingState:
        while state.epoch < self.config.epochs:
            state.epoch += 1
            for x, y in make_batches(state.epoch, 4):
                state.params, _ = train_step(state.params, x, y)
            metric = np.mean([float(eval_loss(state.params, x, y)) for x, y in make_batches(99, 2)])
            self.on_epoch_end(state, float(metric))
            if self.should_stop(state):
                print(f"rank {self.rank}: early stopping after epoch {state.epoch}")
                break
        return state


state = TrainingState(params=jax.device_put(jnp.zeros((8,), jnp.float32), REPLICATED))
state = Trainer(TrainerConfig(), jax.process_index()).train(state)
print("RESULT epochs", state.epoch)
print("RESULT params", np.round(np.asarray(state.params), 4).tolist())
