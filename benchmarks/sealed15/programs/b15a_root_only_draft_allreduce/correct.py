# Tensor-parallel greedy decoding, the MTP draft head runs on every process, so its partial logits all-reduce symmetrically
# Source: https://github.com/ztxz16/fastllm/issues/725
# Written for the mcjax sealed15 evaluation (not copied); run as 2 processes by benchmarks/sealed15/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class EngineConfig:
    hidden: int = 8
    vocab: int = 16
    steps: int = 5
    use_mtp: bool = True           # speculative draft from a multi-token-prediction head


class TPShard:
    """This process's slice of the hidden dimension for the LM head and the MTP head."""

    def __init__(self, cfg, rank, nproc):
        rng = np.random.default_rng(1234)                      # full weights, identical everywhere
        emb = rng.normal(size=(cfg.vocab, cfg.hidden)).astype(np.float32)
        w_lm = rng.normal(size=(cfg.hidden, cfg.vocab)).astype(np.float32)
        w_mtp = rng.normal(size=(cfg.hidden, cfg.vocab)).astype(np.float32)
        cols = np.array_split(np.arange(cfg.hidden), nproc)[rank]
        self.emb, self.w_lm, self.w_mtp = emb[:, cols], w_lm[cols], w_mtp[cols]


def make_allreduce(mesh):
    sharding = NamedSharding(mesh, P("tp"))
    summed = jax.jit(lambda x: jnp.sum(x, axis=0))

    def allreduce(local_vec):
        arr = jax.make_array_from_process_local_data(sharding, local_vec[None, :].astype(np.float32))
        return np.asarray(summed(arr))
    return allreduce


def decode(cfg, shard, allreduce, rank, prompt_token):
    token, out, drafts = prompt_token, [], []
    for _ in range(cfg.steps):
        h_part = np.tanh(shard.emb[token])                       # this shard's hidden slice
        logits = allreduce(h_part @ shard.w_lm)
        if cfg.use_mtp:                                          # every TP shard runs the draft head
            draft_logits = allreduce(h_part @ shard.w_mtp)
            drafts.append(int(np.argmax(draft_logits)))
        token = int(np.argmax(logits))
        out.append(token)
    return out, drafts


def main():
    cfg = EngineConfig()
    rank, nproc = jax.process_index(), jax.process_count()
    mesh = Mesh(np.array(jax.devices()), ("tp",))
    shard = TPShard(cfg, rank, nproc)
    tokens, drafts = decode(cfg, shard, make_allreduce(mesh), rank, prompt_token=3)
    print("RESULT tokens", tokens)
    print("RESULT num_tokens", len(tokens))


if __name__ == "__main__":
    main()
