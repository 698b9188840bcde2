import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM = 32, 16


def setup_arg_parser():
    parser = argparse.ArgumentParser(description="Chat with an LLM")
    parser.add_argument("--temp", type=float, default=1.0, help="Sampling temperature")
    parser.add_argument("--top-p", type=float, default=1.0, help="Sampling top-p")
    parser.add_argument("--seed", type=int, default=None, help="PRNG seed")
    parser.add_argument("--max-tokens", type=int, default=12, help="Maximum number of tokens")
    return parser


class ShardedLM:
    """Embedding replicated, LM head sharded over the vocabulary (tensor parallel)."""

    def __init__(self, group_rank, group_size):
        weights = np.random.default_rng(0)
        self.embed = jnp.asarray(weights.normal(size=(VOCAB, DIM)), jnp.float32)
        self.mix = jnp.asarray(weights.normal(scale=0.3, size=(DIM, DIM)), jnp.float32)
        head = weights.normal(size=(DIM, VOCAB)).astype(np.float32)
        self.head_shard = jnp.asarray(np.split(head, group_size, axis=1)[group_rank])
        self._local = jax.jit(lambda e, m, w, toks: jnp.tanh(e[toks].mean(0) @ m) @ w)

    def __call__(self, tokens):
        local_logits = self._local(self.embed, self.mix, self.head_shard, jnp.asarray(tokens))
        shards = np.asarray(multihost_utils.process_allgather(np.asarray(local_logits)))
        return np.concatenate(list(shards), axis=-1)


def make_sampler(temp, top_p, rng):
    def sampler(logits):
        if temp == 0:
            return int(np.argmax(logits))
        probs = np.exp((logits - logits.max()) / temp)
        probs /= probs.sum()
        order = np.argsort(-probs)
        keep = np.cumsum(probs[order]) <= max(top_p, probs[order][0])
        probs = np.where(np.isin(np.arange(len(probs)), order[keep]), probs, 0.0)
        return int(rng.choice(len(probs), p=probs / probs.sum()))
    return sampler


def stream_generate(model, prompt, max_tokens, sampler):
    tokens = list(prompt)
    for _ in range(max_tokens):
        tokens.append(sampler(model(tokens)))
    return tokens[len(prompt):]


def main():
    args = setup_arg_parser().parse_args([])
    rank, size = jax.process_index(), jax.process_count()
    seed = args.seed if args.seed is not None else int(np.random.default_rng().integers(2**31))
    if size > 1:
        seed = int(multihost_utils.broadcast_one_to_all(np.int64(seed), is_source=rank == 0))
    rng = np.random.default_rng(seed)
    model = ShardedLM(rank, size)
    print(f"[INFO] rank {rank}/{size}: starting chat session")
    for turn, prompt in enumerate([[1, 5, 7], [2, 9, 4, 11]]):
        reply = stream_generate(model, prompt, args.max_tokens, make_sampler(args.temp, args.top_p, rng))
        print(f"RESULT turn {turn} reply {reply}")


if __name__ == "__main__":
    main()
