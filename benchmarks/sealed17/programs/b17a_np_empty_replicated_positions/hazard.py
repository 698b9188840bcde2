# Multi-node decode loop: the padded positions buffer comes from np.empty and is placed as a replicated array on every node
# Source: https://github.com/sgl-project/sglang-jax/pull/155
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PAD_TOKENS, VOCAB, N_DECODE = 16, 64, 3


class ForwardBatch:
    def __init__(self, positions, seq_lens):
        self.positions, self.seq_lens = positions, seq_lens


def prepare_forward_batch(seq_lens, replicated):
    """Flattened positions of every request, padded to the static token budget."""
    positions = np.empty((PAD_TOKENS,), dtype=np.int32)
    offset = 0
    for length in seq_lens:
        positions[offset:offset + length] = np.arange(length, dtype=np.int32)
        offset += length
    return ForwardBatch(jax.device_put(positions, replicated), jax.device_put(np.array(seq_lens, np.int32), replicated))


@jax.jit
def model_forward(embed, positions):
    h = embed[positions % VOCAB] + jnp.sin(positions.astype(jnp.float32))[:, None]
    logits = h @ embed.T
    return jnp.argmax(logits, axis=-1).astype(jnp.int32)


def sample_next_tokens(embed, batch, vocab_sharding):
    """Next-token ids for every slot, laid out over the vocab-parallel devices (2x the token budget)."""
    toks = model_forward(embed, batch.positions)
    return jax.jit(lambda t: jnp.concatenate([t, t[::-1] + 1]), out_shardings=vocab_sharding)(toks)


def detokenize_local(next_tokens):
    # each node detokenizes the slots of its own addressable shard
    local = np.asarray(next_tokens.addressable_shards[0].data).astype(np.int32) * (jax.process_index() + 3)
    n_eos = int((local % 7 == 0).sum())
    del local
    return n_eos


def main():
    mesh = Mesh(np.array(jax.devices()), ("tp",))
    replicated = NamedSharding(mesh, P())
    vocab_sharding = NamedSharding(mesh, P("tp"))
    embed = jax.device_put(jnp.asarray(np.cos(np.arange(VOCAB * 8, dtype=np.float32)).reshape(VOCAB, 8)), replicated)
    seq_lens = [2, 4, 3]
    eos_seen = 0
    checksum = 0
    for _ in range(N_DECODE):
        batch = prepare_forward_batch(seq_lens, replicated)
        next_tokens = sample_next_tokens(embed, batch, vocab_sharding)
        eos_seen += detokenize_local(next_tokens)
        checksum += int(jnp.sum(model_forward(embed, batch.positions)[:sum(seq_lens)]).addressable_shards[0].data)
        seq_lens = [n + 1 for n in seq_lens]
    print("RESULT seq_lens", seq_lens)
    print("RESULT checksum", checksum)


if __name__ == "__main__":
    main()
