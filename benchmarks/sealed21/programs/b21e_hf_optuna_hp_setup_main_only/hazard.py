import json
import os
from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def broadcast_object(obj, size=1024):
    payload = json.dumps(obj).encode().ljust(size) if jax.process_index() == 0 else b" " * size
    out = multihost_utils.broadcast_one_to_all(np.frombuffer(payload, dtype=np.uint8))
    return json.loads(np.asarray(out).tobytes().decode())


@dataclass
class TrainingArguments:
    learning_rate: float = 0.05
    gradient_accumulation_steps: int = 1
    num_train_batches: int = 8
    local_rank: int = 0


class Accelerator:
    def __init__(self, gradient_accumulation_steps=1):
        self.gradient_accumulation_steps = gradient_accumulation_steps

    def reduce_gradients(self, grads):
        return {k: np.asarray(multihost_utils.process_allgather(np.asarray(v))).mean(0) for k, v in grads.items()}


class FixedTrial:
    def __init__(self, params, number):
        self.params, self.number = params, number

    def suggest_float(self, name, low, high):
        return self.params[name]

    def suggest_categorical(self, name, choices):
        return self.params[name]


class Study:
    def __init__(self, seed=0):
        self.rng = np.random.default_rng(seed)
        self.trials = []

    def ask(self):
        trial = FixedTrial({"learning_rate": float(self.rng.uniform(0.01, 0.1)),
                            "gradient_accumulation_steps": int(self.rng.choice([2, 4]))}, len(self.trials))
        self.trials.append(trial)
        return trial


def hp_space(trial):
    return {"learning_rate": trial.suggest_float("learning_rate", 0.01, 0.1),
            "gradient_accumulation_steps": trial.suggest_categorical("gradient_accumulation_steps", [2, 4])}


class Trainer:
    def __init__(self, args, data):
        self.args = args
        self.data = data
        self.create_accelerator_and_postprocess()
        self._grad = jax.jit(jax.value_and_grad(lambda p, x, y: jnp.mean((x @ p["w"] - y) ** 2)))

    def create_accelerator_and_postprocess(self):
        self.accelerator = Accelerator(gradient_accumulation_steps=self.args.gradient_accumulation_steps)

    def _hp_search_setup(self, trial):
        if trial is None:
            return
        for key, value in hp_space(trial).items():
            setattr(self.args, key, type(getattr(self.args, key))(value))
        self.create_accelerator_and_postprocess()

    def train(self, trial=None):
        self._hp_search_setup(trial)
        params = {"w": jnp.zeros(self.data[0][0].shape[-1])}
        acc = None
        ga = self.accelerator.gradient_accumulation_steps
        for step, (x, y) in enumerate(self.data[: self.args.num_train_batches]):
            _, g = self._grad(params, x, y)
            acc = g if acc is None else jax.tree_util.tree_map(jnp.add, acc, g)
            if (step + 1) % ga == 0:
                grads = self.accelerator.reduce_gradients({k: v / ga for k, v in acc.items()})
                params = {k: params[k] - self.args.learning_rate * grads[k] for k in params}
                acc = None
        self.params = params

    def evaluate(self):
        x, y = self.data[-1]
        loss = float(jnp.mean((x @ self.params["w"] - y) ** 2))
        return float(np.asarray(multihost_utils.process_allgather(np.float32(loss))).mean())


def run_hp_search_optuna(trainer, n_trials):
    objectives = []
    if jax.process_index() == 0:
        study = Study(seed=7)
        for _ in range(n_trials):
            trial = study.ask()
            trainer._hp_search_setup(trial)
            broadcast_object(asdict(trainer.args))
            trainer.train(trial=trial)
            objectives.append(trainer.evaluate())
    else:
        for _ in range(n_trials):
            args = broadcast_object(None)
            for key, value in args.items():
                if key != "local_rank":
                    setattr(trainer.args, key, value)
            trainer.train()
            objectives.append(trainer.evaluate())
    return objectives


def main():
    rank = jax.process_index()
    rng = np.random.default_rng(11 + rank)
    x = rng.normal(size=(9, 8, 3)).astype(np.float32)
    data = [(xb, (xb @ np.array([1.0, -2.0, 0.5], dtype=np.float32))) for xb in x]
    trainer = Trainer(TrainingArguments(local_rank=rank), data)
    objectives = run_hp_search_optuna(trainer, n_trials=2)
    print("RESULT objectives", [round(o, 5) for o in objectives])
    print("RESULT final_args", trainer.args.learning_rate, trainer.args.gradient_accumulation_steps)


if __name__ == "__main__":
    main()
