# The dataset shuffle is seeded with the global rank, so members of one sequence-parallel group pick different samples
# Source: https://github.com/EvolvingLMMs-Lab/lmms-engine/pull/60
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
import random

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SEED = 17
SP_SIZE = 2  # both processes form one sequence-parallel group (data-parallel size 1)
HIDDEN = 8


def build_data_list(n=24):
    rng = np.random.default_rng(SEED)
    lengths = rng.integers(3, 12, size=n) * SP_SIZE * 2  # every length splits evenly across the group
    return [rng.standard_normal((int(L), HIDDEN)).astype(np.float32) for L in lengths]


class MultimodalIterableDataset:
    def __init__(self, data_list, shuffle=True):
        self.data_list = data_list
        self.rank = jax.process_index()
        self.sp_rank = self.rank % SP_SIZE
        self.dp_rank = self.rank // SP_SIZE
        self.data_index = list(range(len(data_list)))
        if shuffle:
            random.Random(SEED + self.rank).shuffle(self.data_index)

    def __iter__(self):
        for i in self.data_index:
            seq = self.data_list[i]
            chunk = seq.shape[0] // SP_SIZE  # this rank's slice of the sequence
            yield seq[self.sp_rank * chunk:(self.sp_rank + 1) * chunk]


@jax.jit
def sp_attention_loss(x):
    scores = (x @ x.T) / jnp.sqrt(jnp.float32(HIDDEN))  # every query attends to the full sequence
    attn = jax.nn.softmax(scores, axis=-1)
    return jnp.mean((attn @ x) ** 2)


def main():
    mesh = jax.make_mesh((jax.device_count(),), ("sp",), axis_types=(jax.sharding.AxisType.Auto,))
    seq_sharding = NamedSharding(mesh, P("sp", None))
    dataset = MultimodalIterableDataset(build_data_list())
    losses, tokens = [], 0
    for step, local_chunk in enumerate(dataset):
        if step == 6:
            break
        x = jax.make_array_from_process_local_data(seq_sharding, local_chunk)
        losses.append(float(sp_attention_loss(x)))
        tokens += x.shape[0]
    print("RESULT steps", len(losses), "tokens", tokens)
    print("RESULT mean_loss", round(float(np.mean(losses)), 5))


main()
