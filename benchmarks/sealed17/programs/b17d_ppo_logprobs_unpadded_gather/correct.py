# PPO step under data parallelism: model inputs are padded across processes to the global longest response before the cross-process logprob gather
# Source: https://github.com/huggingface/trl/pull/222
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class PPOConfig:
    vocab: int = 16
    pad_token_id: int = 0
    mini_batch_size: int = 2
    seed: int = 3


def make_rollouts(rank, cfg):
    # queries/responses generated on this process; sentiment prompts of rank 1 run longer
    rng = np.random.default_rng(cfg.seed + rank)
    lengths = [3 + rank * 2, 4 + rank * 3]
    queries = [rng.integers(1, cfg.vocab, size=2) for _ in lengths]
    responses = [rng.integers(1, cfg.vocab, size=n) for n in lengths]
    return queries, responses


def prepare_model_inputs(queries, responses, pad_token_id):
    seqs = [np.concatenate([q, r]) for q, r in zip(queries, responses)]
    width = max(len(s) for s in seqs)
    input_ids = np.full((len(seqs), width), pad_token_id, np.int32)
    attention_mask = np.zeros((len(seqs), width), np.int32)
    for i, s in enumerate(seqs):
        input_ids[i, :len(s)] = s
        attention_mask[i, :len(s)] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def pad_across_processes(x, pad_index):
    width = multihost_utils.process_allgather(np.array([x.shape[1]], np.int32)).max()
    out = np.full((x.shape[0], int(width)), pad_index, x.dtype)
    out[:, :x.shape[1]] = x
    return out


@jax.jit
def batched_logprobs(embed, input_ids, attention_mask):
    logits = embed[input_ids] @ embed.T
    logp = jax.nn.log_softmax(logits[:, :-1], axis=-1)
    tok = jnp.take_along_axis(logp, input_ids[:, 1:, None], axis=-1)[..., 0]
    return tok * attention_mask[:, 1:]


class PPOTrainer:
    def __init__(self, cfg):
        self.cfg = cfg
        self.embed = jnp.asarray(np.random.default_rng(cfg.seed).standard_normal((cfg.vocab, 4)).astype(np.float32))
        self.is_distributed = jax.process_count() > 1

    def step(self, queries, responses):
        model_inputs = prepare_model_inputs(queries, responses, self.cfg.pad_token_id)
        if self.is_distributed:
            for key in ("input_ids", "attention_mask"):
                pad = self.cfg.pad_token_id if key == "input_ids" else 0
                model_inputs[key] = pad_across_processes(model_inputs[key], pad)
        logprobs = np.asarray(batched_logprobs(self.embed, model_inputs["input_ids"], model_inputs["attention_mask"]))
        # stats across the data-parallel group
        all_logprobs = multihost_utils.process_allgather(logprobs)
        all_masks = multihost_utils.process_allgather(model_inputs["attention_mask"][:, 1:])
        mean_logprob = float(all_logprobs.sum() / all_masks.sum())
        return mean_logprob, int(all_masks.sum())


def main():
    cfg = PPOConfig()
    trainer = PPOTrainer(cfg)
    queries, responses = make_rollouts(jax.process_index(), cfg)
    mean_logprob, n_tokens = trainer.step(queries, responses)
    print("RESULT ppo/mean_logprob", round(mean_logprob, 4))
    print("RESULT ppo/num_tokens", n_tokens)


if __name__ == "__main__":
    main()
