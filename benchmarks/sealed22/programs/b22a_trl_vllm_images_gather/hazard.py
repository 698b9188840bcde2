# GRPO-style rollout step with a vLLM "server mode" generator: every rank gathers its prompts (and
# the images of multimodal samples) to the main process, the main process generates completions
# for all ranks, and each rank takes back its own slice to score and train on.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, PROMPT_LEN, IMG_DIM, COMPLETION_LEN = 32, 6, 8, 4


def gather_object(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x)))


def load_mixed_shard(rank, num_prompts=2):
    """A mixed text / image-text dataset; this shard's rows come from `rank`'s files."""
    rng = np.random.default_rng(7 + rank)
    prompts = rng.integers(1, VOCAB, size=(num_prompts, PROMPT_LEN)).astype(np.int32)
    has_images = rank % 2 == 0          # the image-text files were assigned to even ranks
    images = rng.normal(size=(num_prompts, IMG_DIM)).astype(np.float32) if has_images else None
    return prompts, images


class TinyPolicy:
    def __init__(self, seed=0):
        k1, k2 = jax.random.split(jax.random.PRNGKey(seed))
        self.tok_emb = jax.random.normal(k1, (VOCAB, VOCAB)) * 0.3
        self.img_proj = jax.random.normal(k2, (IMG_DIM, VOCAB)) * 0.3

    def generate(self, prompts, images):
        @jax.jit
        def _gen(prompts, images):
            h = self.tok_emb[prompts].mean(1) + images @ self.img_proj
            steps = jnp.arange(COMPLETION_LEN)[None, :, None]
            return jnp.argmax(h[:, None, :] + 0.1 * steps, axis=-1).astype(jnp.int32)
        if images is None:
            images = np.zeros((prompts.shape[0], IMG_DIM), np.float32)
        return np.asarray(_gen(prompts, images))


class VLLMGeneration:
    def __init__(self, policy, mode="server"):
        self.policy = policy
        self.mode = mode

    def generate(self, prompts, images):
        rank, world = jax.process_index(), jax.process_count()
        if self.mode == "server":
            all_prompts = gather_object(prompts).reshape(-1, PROMPT_LEN)
            all_images = gather_object(images).reshape(-1, IMG_DIM) if images is not None else None
            if rank == 0:
                completions = self.policy.generate(all_prompts, all_images)
            else:
                completions = np.zeros((world * prompts.shape[0], COMPLETION_LEN), np.int32)
            completions = np.asarray(multihost_utils.broadcast_one_to_all(completions))
            n = prompts.shape[0]
            return completions[rank * n:(rank + 1) * n]
        return self.policy.generate(prompts, images)


def reward_fn(completions):
    return (completions % 2 == 0).mean(axis=1).astype(np.float32)


def main():
    rank = jax.process_index()
    prompts, images = load_mixed_shard(rank)
    generator = VLLMGeneration(TinyPolicy())
    completions = generator.generate(prompts, images)
    rewards = reward_fn(completions)
    mean_reward = float(gather_object(rewards).mean())
    print(f"rank {rank}: completions {completions.tolist()}")
    print("RESULT mean_reward", round(mean_reward, 4))
    print("RESULT num_completions", int(gather_object(np.int32(len(completions))).sum()))


if __name__ == "__main__":
    main()
