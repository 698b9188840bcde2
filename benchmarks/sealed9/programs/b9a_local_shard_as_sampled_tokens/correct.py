# Sampled tokens sharded over the data axis are copied to host with an all-gather of every process's shard
# Source: https://github.com/vllm-project/tpu-inference/pull/3592
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class EngineConfig:
    vocab: int = 32
    hidden: int = 16
    max_num_seqs: int = 8
    decode_steps: int = 4
    eos_id: int = 0


def safe_device_get(x):
    """Copy a jax.Array to host numpy under multi-host SPMD."""
    if isinstance(x, jax.Array) and not x.is_fully_addressable:
        if x.is_fully_replicated:
            return np.asarray(x.addressable_shards[0].data)
        return np.asarray(multihost_utils.process_allgather(x, tiled=True))
    return np.asarray(jax.device_get(x))


def make_weights(cfg: EngineConfig):
    rng = np.random.default_rng(0)
    return (rng.normal(size=(cfg.vocab, cfg.hidden)).astype(np.float32),
            rng.normal(size=(cfg.hidden, cfg.vocab)).astype(np.float32))


@jax.jit
def decode_step(embed, unembed, tokens):
    h = jnp.tanh(jax.nn.one_hot(tokens, embed.shape[0]) @ embed)
    return jnp.argmax(h @ unembed, axis=-1).astype(jnp.int32)


class Runner:
    def __init__(self, cfg: EngineConfig):
        self.cfg = cfg
        mesh = jax.make_mesh((jax.device_count(),), ("data",))
        self.batch_sharding = NamedSharding(mesh, P("data"))
        rep = NamedSharding(mesh, P())
        self.embed, self.unembed = (jax.device_put(w, rep) for w in make_weights(cfg))

    def host_extract_sampled_tokens(self, next_tokens):
        return safe_device_get(next_tokens)

    def generate(self, prompts_local: np.ndarray):
        tokens = jax.make_array_from_process_local_data(self.batch_sharding, prompts_local)
        outputs = []
        for _ in range(self.cfg.decode_steps):
            tokens = decode_step(self.embed, self.unembed, tokens)
            outputs.append(self.host_extract_sampled_tokens(tokens))
        return np.stack(outputs, axis=1)


def main():
    cfg = EngineConfig()
    runner = Runner(cfg)
    per_host = cfg.max_num_seqs // jax.process_count()
    start = jax.process_index() * per_host
    prompts = (np.arange(start, start + per_host, dtype=np.int32) * 5 + 3) % cfg.vocab
    generated = runner.generate(prompts)
    finished = int(np.sum(np.any(generated == cfg.eos_id, axis=1)))
    print("RESULT num_seqs", generated.shape[0])
    print("RESULT finished", finished)
    print("RESULT token_checksum", int(generated.sum()))


main()
