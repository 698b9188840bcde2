# Trainer.hyperparameter_search: random-search trials over a data-parallel text classifier
# Source: https://github.com/huggingface/transformers/issues/18609
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import math
import os
import random
from dataclasses import dataclass, replace

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainingArguments:
    learning_rate: float = 5e-2
    num_train_epochs: int = 2
    per_device_train_batch_size: int = 8
    seed: int = 42


class RandomSampler:
    def __init__(self, seed=None):
        self._rng = random.Random(seed)

    def sample(self, kind, low, high=None, log=False, choices=None):
        if kind == "categorical":
            return self._rng.choice(choices)
        if kind == "int":
            return self._rng.randint(low, high)
        if log:
            return math.exp(self._rng.uniform(math.log(low), math.log(high)))
        return self._rng.uniform(low, high)


class Trial:
    def __init__(self, study, number):
        self.study, self.number, self.params = study, number, {}

    def suggest_float(self, name, low, high, log=False):
        self.params[name] = self.study.sampler.sample("float", low, high, log=log)
        return self.params[name]

    def suggest_int(self, name, low, high):
        self.params[name] = self.study.sampler.sample("int", low, high)
        return self.params[name]

    def suggest_categorical(self, name, choices):
        self.params[name] = self.study.sampler.sample("categorical", None, choices=choices)
        return self.params[name]


class Study:
    def __init__(self, direction="minimize", sampler=None):
        self.direction, self.sampler, self.trials = direction, sampler or RandomSampler(), []

    def optimize(self, objective, n_trials):
        for number in range(n_trials):
            trial = Trial(self, number)
            self.trials.append((trial, objective(trial)))

    @property
    def best_trial(self):
        return min(self.trials, key=lambda t: t[1])


def default_hp_space(trial):
    return {
        "learning_rate": trial.suggest_float("learning_rate", 1e-2, 3e-1, log=True),
        "num_train_epochs": trial.suggest_int("num_train_epochs", 1, 4),
        "seed": trial.suggest_int("seed", 1, 40),
        "per_device_train_batch_size": trial.suggest_categorical("per_device_train_batch_size", [4, 8, 16]),
    }


def load_local_split(rank, n=48, dim=10):
    rng = np.random.default_rng(7 + rank)
    x = rng.normal(size=(n, dim)).astype(np.float32)
    y = (x[:, :3].sum(axis=1) > 0).astype(np.float32)
    return x, y


def loss_fn(params, x, y):
    logits = x @ params["w"] + params["b"]
    return jnp.mean(jnp.logaddexp(0.0, logits) - y * logits)


grad_fn = jax.jit(jax.value_and_grad(loss_fn))


class Trainer:
    def __init__(self, args, train_data, eval_data):
        self.args, self.train_data, self.eval_data = args, train_data, eval_data

    def model_init(self):
        key = jax.random.PRNGKey(self.args.seed)
        return {"w": 0.1 * jax.random.normal(key, (self.train_data[0].shape[1],)), "b": jnp.zeros(())}

    def train(self):
        params = self.model_init()
        x, y = self.train_data
        bs = self.args.per_device_train_batch_size
        for epoch in range(self.args.num_train_epochs):
            for start in range(0, len(x) - bs + 1, bs):
                _, grads = grad_fn(params, x[start:start + bs], y[start:start + bs])
                grads = {k: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(axis=0)
                         for k, g in grads.items()}
                params = {k: params[k] - self.args.learning_rate * grads[k] for k in params}
        return params

    def evaluate(self, params):
        local = float(loss_fn(params, *self.eval_data))
        return float(np.mean(multihost_utils.process_allgather(np.float32(local))))

    def hyperparameter_search(self, hp_space, n_trials):
        base_args = self.args

        def _objective(trial):
            hp = hp_space(trial)
            self.args = replace(base_args, **hp)
            return self.evaluate(self.train())

        study = Study(direction="minimize")
        study.optimize(_objective, n_trials=n_trials)
        return study.best_trial


def main():
    rank = jax.process_index()
    x, y = load_local_split(rank)
    trainer = Trainer(TrainingArguments(), (x[:32], y[:32]), (x[32:], y[32:]))
    best, value = trainer.hyperparameter_search(default_hp_space, n_trials=3)
    print("RESULT best_trial", best.number)
    print("RESULT best_params", {k: (round(v, 5) if isinstance(v, float) else v) for k, v in sorted(best.params.items())})
    print("RESULT best_eval_loss", round(value, 5))


if __name__ == "__main__":
    main()
