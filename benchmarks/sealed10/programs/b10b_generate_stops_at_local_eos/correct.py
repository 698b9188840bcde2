# Greedy generation with a parameter-sharded model: processes keep decoding in lockstep until every process is done
# Source: https://github.com/huggingface/transformers/issues/18281
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class GenerationConfig:
    vocab: int = 8
    eos_token_id: int = 0
    max_new_tokens: int = 10
    batch_per_process: int = 2


MESH = Mesh(np.array(jax.devices()), ("dp",))
ROWS = NamedSharding(MESH, P("dp"))  # batch rows / parameter rows partitioned over processes (ZeRO-3 style)


class TinyLM:
    """Embedding + output projection, both partitioned over the processes; forward gathers them."""

    def __init__(self, cfg):
        v = cfg.vocab
        emb = np.eye(v, dtype=np.float32)
        proj = np.roll(np.eye(v, dtype=np.float32), 1, axis=1)  # predicts token + 1 (mod vocab)
        self.params = {"emb": jax.device_put(emb, ROWS), "proj": jax.device_put(proj, ROWS)}
        self._step = jax.jit(self._forward)

    @staticmethod
    def _forward(params, last_tokens):
        h = params["emb"][last_tokens]           # gather of the partitioned embedding
        logits = h @ params["proj"]              # contraction over the partitioned dim: all-reduce
        return jnp.argmax(logits, axis=-1).astype(jnp.int32)

    def next_tokens(self, local_last):
        tokens = jax.make_array_from_process_local_data(ROWS, local_last)
        out = self._step(self.params, tokens)
        return np.asarray(multihost_utils.global_array_to_host_local_array(out, MESH, P("dp")))


def local_prompts(cfg):
    # each process gets its own prompts; the distance to EOS differs by construction
    starts = {0: [5, 6], 1: [1, 2]}[jax.process_index()]
    return np.array(starts, dtype=np.int32)


def generate(model, cfg, prompts):
    seqs = [[int(t)] for t in prompts]
    last = prompts.copy()
    done = last == cfg.eos_token_id
    for _ in range(cfg.max_new_tokens):
        this_peer_finished = np.int32(done.all())
        if np.asarray(multihost_utils.process_allgather(this_peer_finished)).min() == 1:
            break
        nxt = model.next_tokens(last)
        nxt = np.where(done, cfg.eos_token_id, nxt)
        for row, tok in enumerate(nxt):
            if not done[row]:
                seqs[row].append(int(tok))
        done = done | (nxt == cfg.eos_token_id)
        last = nxt
    return seqs


def main():
    cfg = GenerationConfig()
    model = TinyLM(cfg)
    seqs = generate(model, cfg, local_prompts(cfg))
    lengths = np.array([len(s) for s in seqs], dtype=np.int32)
    all_lengths = np.asarray(multihost_utils.process_allgather(lengths)).reshape(-1)
    print("RESULT generated_lengths", all_lengths.tolist())
    print("RESULT total_tokens", int(all_lengths.sum()))


if __name__ == "__main__":
    main()
