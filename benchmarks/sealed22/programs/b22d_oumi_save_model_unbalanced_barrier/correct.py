# An oumi/LeMa-style training entry point: a HuggingFace-like trainer runs data-parallel training,
# then the global leader saves the final training state and model, all workers wait for it at a
# barrier, and the saved model is evaluated data-parallel on every worker.
import json
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def is_world_process_zero():
    return jax.process_index() == 0


def barrier(name="barrier"):
    multihost_utils.sync_global_devices(name)


@dataclass
class TrainingParams:
    output_dir: str
    max_steps: int = 6
    learning_rate: float = 0.1
    save_final_model: bool = True


@dataclass
class TrainingConfig:
    training: TrainingParams


class HuggingFaceTrainer:
    def __init__(self, rank):
        self.params = {"w": np.zeros(4, np.float32)}
        self.global_step = 0
        self.rng = np.random.default_rng(11 + rank)
        self._grad = jax.jit(jax.grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))

    def train(self, config):
        for _ in range(config.training.max_steps):
            x = self.rng.normal(size=(8, 4)).astype(np.float32)
            y = x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)
            g = np.asarray(self._grad(self.params["w"], x, y))
            g = np.asarray(multihost_utils.process_allgather(g)).mean(0)
            self.params["w"] = self.params["w"] - config.training.learning_rate * g
            self.global_step += 1

    def save_state(self, config):
        with open(os.path.join(config.training.output_dir, "trainer_state.json"), "w") as f:
            json.dump({"global_step": self.global_step}, f)

    def save_model(self, config):
        if is_world_process_zero():
            output_dir = config.training.output_dir
            np.save(os.path.join(output_dir, "model.npy"), self.params["w"])
            print(f"Model has been saved at {output_dir}.")


def train(config):
    trainer = HuggingFaceTrainer(jax.process_index())
    trainer.train(config)
    # Save final checkpoint & training state.
    if is_world_process_zero():
        os.makedirs(config.training.output_dir, exist_ok=True)
        trainer.save_state(config)
        if config.training.save_final_model:
            trainer.save_model(config=config)
    barrier("train")


def evaluate(config):
    w = np.load(os.path.join(config.training.output_dir, "model.npy"))
    rng = np.random.default_rng(500 + jax.process_index())
    x = rng.normal(size=(16, 4)).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    local = np.array([float(np.mean((x @ w - y) ** 2))], np.float32)
    return float(np.asarray(multihost_utils.process_allgather(local)).mean())


def main():
    out = os.path.join(tempfile.gettempdir(), f"oumi_{os.environ.get('JOB_ID', 'job')}", "output")
    config = TrainingConfig(training=TrainingParams(output_dir=out))
    train(config)
    eval_loss = evaluate(config)
    print("RESULT eval_loss", round(eval_loss, 5))


if __name__ == "__main__":
    main()
