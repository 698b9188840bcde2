# The decode loop length comes from each rank's own source lengths, but every step runs an MoE collective
# Source: https://github.com/microsoft/Tutel/issues/182 (port of a fairseq/Tutel MoE generation hang to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("expert",))


@dataclass
class GenerationConfig:
    max_len_a: float = 1.0
    max_len_b: int = 2
    max_len: int = 64
    hidden: int = 4


def moe_layer(h):
    """Every rank's tokens visit every expert: an all-gather over the expert axis on each call."""
    @partial(jax.shard_map, mesh=MESH, in_specs=P("expert"), out_specs=P("expert"))
    def dispatch(x):
        everyone = jax.lax.all_gather(x, "expert", tiled=True)
        return x + 0.01 * jnp.mean(everyone, axis=0, keepdims=True)
    return dispatch(h)


class SequenceGenerator:
    def __init__(self, config: GenerationConfig):
        self.config = config
        self.step_fn = jax.jit(lambda h: jnp.tanh(moe_layer(h) * 1.1))

    def _max_decode_len(self, src_lengths: np.ndarray) -> int:
        src_len = int(src_lengths.max())
        return min(int(self.config.max_len_a * src_len + self.config.max_len_b), self.config.max_len - 1)

    def generate(self, src_tokens: np.ndarray, src_lengths: np.ndarray):
        max_len = self._max_decode_len(src_lengths)
        h = jax.make_array_from_process_local_data(
            NamedSharding(MESH, P("expert")), src_tokens[:, :self.config.hidden].astype(np.float32))
        for _ in range(max_len + 1):
            h = self.step_fn(h)
        return max_len, h


def load_local_batch():
    """The sentences of this rank's batch; lengths differ from rank to rank."""
    rng = np.random.default_rng(7 + jax.process_index())
    lengths = np.array([5, 9]) + 4 * jax.process_index()
    tokens = rng.integers(1, 50, size=(2, 16))
    return tokens, lengths


gen = SequenceGenerator(GenerationConfig())
tokens, lengths = load_local_batch()
steps, h = gen.generate(tokens, lengths)
out = multihost_utils.process_allgather(h, tiled=True)
print("RESULT decode_steps", steps)
print("RESULT hidden", round(float(np.sum(out)), 4))
