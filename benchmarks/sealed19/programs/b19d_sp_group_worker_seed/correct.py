# GRPO policy-loss step with sequence (context) parallelism: every rank of an SP group loads the same
# batch (workers seeded per SP group) and keeps its slice of the sequence; the reduction runs over the global sequence
# Source: https://github.com/axolotl-ai-cloud/axolotl/pull/3920
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

IGNORE_INDEX = -100


@dataclass
class TrainConfig:
    seed: int = 42
    context_parallel_size: int = 2
    micro_batch_size: int = 4
    max_seq_len: int = 16
    vocab: int = 32


def make_completions(cfg):
    rng = np.random.default_rng(cfg.seed)
    lengths = rng.integers(5, cfg.max_seq_len + 1, size=32)
    return [rng.integers(1, cfg.vocab, size=n) for n in lengths]


class GRPOCollator:
    def __init__(self, cfg, worker_seed):
        self.cfg = cfg
        self.rng = np.random.default_rng(worker_seed)

    def __call__(self, samples):
        order = self.rng.permutation(len(samples))[: self.cfg.micro_batch_size]
        input_ids = np.zeros((self.cfg.micro_batch_size, self.cfg.max_seq_len), np.int32)
        labels = np.full_like(input_ids, IGNORE_INDEX)
        for row, idx in enumerate(order):
            seq = samples[idx]
            input_ids[row, : len(seq)] = seq
            labels[row, : len(seq) - 1] = seq[1:]
        return {"input_ids": input_ids, "labels": labels}


def _prepare_dataloader(cfg, dataset, process_index):
    worker_seed = cfg.seed + process_index // cfg.context_parallel_size
    collate = GRPOCollator(cfg, worker_seed)
    for start in range(0, len(dataset), 8):
        yield collate(dataset[start:start + 8])


def policy_logprob_sum(params, input_ids, labels):
    logits = params["embed"][input_ids] @ params["head"]
    logits = logits + jnp.cumsum(logits, axis=1) * 0.01
    logp = jax.nn.log_softmax(logits, axis=-1)
    mask = labels != IGNORE_INDEX
    tok_logp = jnp.take_along_axis(logp, jnp.where(mask, labels, 0)[..., None], axis=-1)[..., 0]
    return jnp.sum(jnp.where(mask, tok_logp, 0.0))


def main():
    cfg = TrainConfig()
    rank = jax.process_index()
    sp_rank = rank % cfg.context_parallel_size
    mesh = Mesh(np.array(jax.devices()), ("sp",))
    seq_sharding = NamedSharding(mesh, P(None, "sp"))
    key = jax.random.PRNGKey(0)
    params = {"embed": 0.1 * jax.random.normal(key, (cfg.vocab, 8)),
              "head": 0.1 * jax.random.normal(jax.random.fold_in(key, 1), (8, cfg.vocab))}
    logprob_sum = jax.jit(policy_logprob_sum)

    losses, token_counts = [], []
    for batch in _prepare_dataloader(cfg, make_completions(cfg), rank):
        chunk = cfg.max_seq_len // cfg.context_parallel_size
        local = {k: v[:, sp_rank * chunk:(sp_rank + 1) * chunk] for k, v in batch.items()}
        input_ids = jax.make_array_from_process_local_data(seq_sharding, local["input_ids"])
        labels = jax.make_array_from_process_local_data(seq_sharding, local["labels"])
        num_items_in_batch = int((batch["labels"] != IGNORE_INDEX).sum())
        loss = -float(logprob_sum(params, input_ids, labels)) / num_items_in_batch
        losses.append(loss)
        token_counts.append(num_items_in_batch)

    print("RESULT steps", len(losses))
    print("RESULT tokens_per_step", token_counts)
    print("RESULT mean_policy_loss", round(float(np.mean(losses)), 5))


if __name__ == "__main__":
    main()
