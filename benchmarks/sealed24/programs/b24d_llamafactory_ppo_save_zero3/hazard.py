import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

HIDDEN, VOCAB = 8, 16


@dataclass
class Seq2SeqTrainingArguments:
    output_dir: str
    learning_rate: float = 0.05
    ppo_epochs: int = 2
    save_steps: int = 3
    max_steps: int = 6

    @property
    def should_save(self):
        return jax.process_index() == 0


class ZeroStage3Model:
    """AutoModelForCausalLMWithValueHead partitioned ZeRO-3 style: each rank owns a slice of every tensor."""

    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        full = {"lm_head": rng.normal(size=(HIDDEN, VOCAB)) * 0.1, "v_head": rng.normal(size=(HIDDEN,)) * 0.1}
        world, rank = jax.process_count(), jax.process_index()
        self.shapes = {k: v.shape for k, v in full.items()}
        self.partitions = {k: np.array_split(v.ravel().astype(np.float32), world)[rank] for k, v in full.items()}

    def gather_params(self):
        out = {}
        for k, shape in self.shapes.items():
            parts = np.asarray(multihost_utils.process_allgather(self.partitions[k]))
            out[k] = jnp.asarray(parts.reshape(-1)[:int(np.prod(shape))].reshape(shape))
        return out

    def apply_gradients(self, grads, lr):
        world, rank = jax.process_count(), jax.process_index()
        for k, g in grads.items():
            g = np.asarray(multihost_utils.process_allgather(np.asarray(g, np.float32))).mean(0)
            self.partitions[k] = self.partitions[k] - lr * np.array_split(g.ravel(), world)[rank]


class Accelerator:
    def get_state_dict(self, model):
        return {k: np.asarray(v) for k, v in model.gather_params().items()}


def ppo_loss(params, hidden, actions, advantages, returns):
    logp = jax.nn.log_softmax(hidden @ params["lm_head"], -1)
    pg = -(jnp.take_along_axis(logp, actions[:, None], -1)[:, 0] * advantages).mean()
    values = hidden @ params["v_head"]
    return pg + 0.5 * ((values - returns) ** 2).mean()


class CustomPPOTrainer:
    def __init__(self, args, model):
        self.args, self.model, self.accelerator = args, model, Accelerator()
        self.rng = np.random.default_rng(1000 + jax.process_index())
        self._grad = jax.jit(jax.value_and_grad(ppo_loss))

    def get_rollout(self):
        hidden = self.rng.normal(size=(16, HIDDEN)).astype(np.float32)
        actions = self.rng.integers(0, VOCAB, size=16)
        rewards = self.rng.normal(size=16).astype(np.float32)
        return hidden, actions, rewards

    def step(self, hidden, actions, rewards):
        adv = (rewards - rewards.mean()) / (rewards.std() + 1e-6)
        for _ in range(self.args.ppo_epochs):
            params = self.model.gather_params()
            loss, grads = self._grad(params, hidden, actions, adv, rewards)
            self.model.apply_gradients(grads, self.args.learning_rate)
        return float(loss)

    def _save(self, output_dir, state_dict):
        os.makedirs(output_dir, exist_ok=True)
        np.savez(os.path.join(output_dir, "model.npz"), **state_dict)

    def save_model(self, output_dir=None):
        if self.args.should_save:
            self._save(output_dir, state_dict=self.accelerator.get_state_dict(self.model))

    def ppo_train(self):
        stats = []
        for step in range(1, self.args.max_steps + 1):
            loss = self.step(*self.get_rollout())
            stats.append(loss)
            if step % self.args.save_steps == 0:
                self.save_model(os.path.join(self.args.output_dir, f"checkpoint-{step}"))
        return stats


def main():
    out = os.path.join(tempfile.gettempdir(), f"llamafactory_ppo_{os.environ.get('JOB_ID', 'local')}")
    args = Seq2SeqTrainingArguments(output_dir=out)
    trainer = CustomPPOTrainer(args, ZeroStage3Model())
    stats = trainer.ppo_train()
    mean_loss = np.asarray(multihost_utils.process_allgather(np.float32(stats[-1]))).mean()
    params = trainer.model.gather_params()
    print("RESULT ppo/loss", round(float(mean_loss), 4))
    print("RESULT v_head", np.round(np.asarray(params["v_head"]), 4).tolist())
    print("RESULT lm_head_sum", round(float(jnp.sum(params["lm_head"])), 4))


if __name__ == "__main__":
    main()
