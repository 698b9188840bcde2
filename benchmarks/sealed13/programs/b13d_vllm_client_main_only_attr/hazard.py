# GRPO rollout helper in vLLM server mode: every process calls the vLLM client, which only the main process created
# Source: https://github.com/huggingface/trl/pull/5841
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
DP = NamedSharding(MESH, P("dp"))
PROMPT_LEN, COMPLETION_LEN, PER_DEVICE = 4, 6, 2


class VLLMClient:
    """Talks to the `trl vllm-serve` server; one connection per job, opened by the main process."""

    def generate(self, prompts, max_tokens, temperature=0.0):
        seeds = prompts.sum(axis=1, keepdims=True)
        return ((seeds + np.arange(max_tokens)[None, :] * 3) % 11).astype(np.int32)


class VLLMGeneration:
    def __init__(self, mode):
        self.mode = mode
        if mode == "server" and jax.process_index() == 0:
            self.vllm_client = VLLMClient()


class GRPOTrainer:
    def __init__(self):
        self.vllm_generation = VLLMGeneration("server")
        self.params = jnp.arange(11, dtype=jnp.float32) * 0.1
        self.generation_kwargs = {"max_tokens": COMPLETION_LEN, "temperature": 0.0}


def generate_rollout_completions(trainer, prompts):
    return trainer.vllm_generation.vllm_client.generate(prompts, **trainer.generation_kwargs)


def reward_fn(completions):
    return (completions == 7).sum(axis=1).astype(np.float32)


@jax.jit
def grpo_loss(params, completions, advantages):
    logp = jax.nn.log_softmax(params)[completions].sum(axis=1)
    return -jnp.mean(advantages * logp)


def training_step(trainer, prompts):
    completions = generate_rollout_completions(trainer, prompts)
    rewards = reward_fn(completions)
    all_rewards = multihost_utils.process_allgather(rewards, tiled=True)
    advantages = (rewards - all_rewards.mean()) / (all_rewards.std() + 1e-4)
    comp = jax.make_array_from_process_local_data(DP, completions)
    adv = jax.make_array_from_process_local_data(DP, advantages.astype(np.float32))
    return float(all_rewards.mean()), float(grpo_loss(trainer.params, comp, adv))


def main():
    trainer = GRPOTrainer()
    rank = jax.process_index()
    prompts = (np.arange(PER_DEVICE * PROMPT_LEN).reshape(PER_DEVICE, PROMPT_LEN) + 5 * rank).astype(np.int32)
    reward, loss = training_step(trainer, prompts)
    print("RESULT mean_reward", round(reward, 4))
    print("RESULT loss", round(loss, 4))


if __name__ == "__main__":
    main()
