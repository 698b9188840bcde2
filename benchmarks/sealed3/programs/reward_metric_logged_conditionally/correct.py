# GRPO-style trainer: reward functions log metrics only for samples they apply to; the logger gathers all ranks' keys
# Source: https://github.com/huggingface/trl/issues/7310
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import collections
import os
import pickle
import re

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PROMPTS = [f"Solve {i} + {i + 1}" for i in range(8)]
FORMAT = re.compile(r"^<think>.*</think><answer>\d+</answer>$")


def fake_generate(prompt: str, step: int) -> str:
    """Stand-in for sampling: even prompt ids answer in the tagged format, odd ones in plain text."""
    i = int(prompt.split()[1])
    answer = 2 * i + 1 + (step % 2)
    return f"<think>add</think><answer>{answer}</answer>" if i % 2 == 0 else f"The answer is {answer}"


def all_gather_object(obj) -> list:
    data = np.frombuffer(pickle.dumps(obj), np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.int32(len(data)))).reshape(-1)
    buf = np.zeros(int(sizes.max()), np.uint8)
    buf[:len(data)] = data
    gathered = np.asarray(multihost_utils.process_allgather(buf))
    return [pickle.loads(gathered[r, :sizes[r]].tobytes()) for r in range(len(sizes))]  # nosec


class MetricLogger:
    def __init__(self):
        self._pending_metrics = collections.defaultdict(list)
        self._metrics = collections.defaultdict(list)

    def log_metric(self, name: str, value: float):
        self._pending_metrics[name].append(value)

    def flush(self):
        # Every rank iterates the union of all ranks' metric names; a rank without a name sends NaN.
        all_names = sorted(set().union(*all_gather_object(sorted(self._pending_metrics))))
        for name in all_names:
            values = self._pending_metrics.get(name, [])
            local_mean = np.float32(sum(values) / len(values)) if values else np.float32(np.nan)
            gathered = np.asarray(multihost_utils.process_allgather(local_mean))
            self._metrics[name].append(float(np.nanmean(gathered)))
        self._pending_metrics.clear()


def format_reward(completions: list[str], logger: MetricLogger) -> list[float]:
    rewards = []
    for c in completions:
        if c.startswith("<think>"):
            ok = bool(FORMAT.match(c))
            logger.log_metric("format_accuracy", float(ok))
            rewards.append(1.0 if ok else 0.0)
        else:
            rewards.append(0.0)
    return rewards


def length_reward(completions: list[str], logger: MetricLogger) -> list[float]:
    rewards = [min(len(c) / 40.0, 1.0) for c in completions]
    logger.log_metric("completion_length", float(np.mean([len(c) for c in completions])))
    return rewards


class GRPOTrainer:
    def __init__(self, reward_funcs, mesh):
        self.reward_funcs = reward_funcs
        self.logger = MetricLogger()
        self.sharding = NamedSharding(mesh, P("data"))
        self.bias = jnp.zeros((), jnp.float32)
        self._update = jax.jit(lambda b, r: b + 0.1 * (jnp.mean(r) - b))

    def local_prompts(self) -> list[str]:
        # Interleaved split of the prompts over processes, like a distributed sampler without shuffling.
        return PROMPTS[jax.process_index()::jax.process_count()]

    def training_step(self, step: int):
        completions = [fake_generate(p, step) for p in self.local_prompts()]
        rewards = np.sum([f(completions, self.logger) for f in self.reward_funcs], axis=0).astype(np.float32)
        self.bias = self._update(self.bias, jax.make_array_from_process_local_data(self.sharding, rewards))
        self.logger.flush()

    def train(self, steps: int):
        for step in range(steps):
            self.training_step(step)
        return {k: v[-1] for k, v in sorted(self.logger._metrics.items())}


def main():
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    trainer = GRPOTrainer([format_reward, length_reward], mesh)
    metrics = trainer.train(steps=3)
    print("RESULT", f"bias={float(trainer.bias):.5f}")
    for k, v in metrics.items():
        print("RESULT", f"{k}={v:.4f}")


if __name__ == "__main__":
    main()
