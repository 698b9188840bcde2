# Hyperparameter search in a multi-process JAX job: every process asks its own sampler for the trial's parameters
# Source: https://github.com/optuna/optuna-integration/issues/275
# Written for the mcjax sealed2 evaluation (not copied); run as 2 processes by benchmarks/sealed2/run_pair.py.
import os
import random

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
DATA = NamedSharding(MESH, P("data"))
REPL = NamedSharding(MESH, P())


class RandomSampler:
    def __init__(self, seed: int | None = None):
        self._rng = random.Random(seed)

    def sample(self, low: float, high: float, log: bool = False) -> float:
        if log:
            return float(np.exp(self._rng.uniform(np.log(low), np.log(high))))
        return self._rng.uniform(low, high)


class Trial:
    def __init__(self, sampler: RandomSampler, number: int):
        self._sampler = sampler
        self.number = number
        self.params: dict[str, float] = {}

    def suggest_float(self, name: str, low: float, high: float, log: bool = False) -> float:
        self.params[name] = self._sampler.sample(low, high, log)
        return self.params[name]

    def suggest_int(self, name: str, low: int, high: int) -> int:
        self.params[name] = int(round(self._sampler.sample(low - 0.49, high + 0.49)))
        return self.params[name]


def objective(trial: Trial) -> float:
    lr = trial.suggest_float("lr", 1e-3, 1e-1, log=True)
    width = trial.suggest_int("width", 4, 16)
    w = jax.device_put(jnp.full((3, width), 0.1), REPL)

    @jax.jit
    def step(w, x):
        loss, g = jax.value_and_grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)
        return w - lr * g, loss

    rng = np.random.default_rng(jax.process_index())
    for _ in range(3):
        w, loss = step(w, jax.make_array_from_process_local_data(DATA, rng.normal(size=(4, 3)).astype(np.float32)))
    return float(loss)


sampler = RandomSampler()
results = []
for number in range(2):
    trial = Trial(sampler, number)
    results.append((number, round(objective(trial), 5)))

print("RESULT", results)
