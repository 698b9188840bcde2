# PPO validation with a TP rollout engine: the eval set is padded to the world size, chunked, then all-gathered in the TP group
# Source: https://github.com/verl-project/verl/issues/12
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("tp",))
VOCAB_SHARDS = NamedSharding(MESH, P(None, "tp"))
PROMPT_LEN, VOCAB, HIDDEN = 5, 8, 4


@dataclass
class DataProto:
    input_ids: np.ndarray
    answers: np.ndarray

    def chunk(self, n):
        ids = np.array_split(self.input_ids, n)
        ans = np.array_split(self.answers, n)
        return [DataProto(i, a) for i, a in zip(ids, ans)]


def pad_dataproto_to_divisor(data, divisor):
    pad = (-len(data.answers)) % divisor      # repeat leading rows; they are dropped from the metrics
    return DataProto(np.concatenate([data.input_ids, data.input_ids[:pad]]),
                     np.concatenate([data.answers, data.answers[:pad]])), pad


def load_val_dataset(n=7):
    rng = np.random.default_rng(3)
    ids = rng.integers(0, VOCAB, size=(n, PROMPT_LEN)).astype(np.int32)
    return DataProto(ids, ids.sum(axis=1) % VOCAB)


@jax.jit
def greedy_next(prompts, w_head):
    h = jax.nn.one_hot(prompts, VOCAB).sum(axis=1)[:, :HIDDEN]
    return jnp.argmax(h @ w_head, axis=-1)          # vocab-parallel head: logits gathered over tp


class FSDPVLLMShardingManager:
    """Before rollout: gather the tp group's prompts; after: keep this rank's share."""

    def preprocess_data(self, data):
        gathered = multihost_utils.process_allgather(data.input_ids, tiled=True)
        return DataProto(np.asarray(gathered), data.answers)

    def postprocess_data(self, responses, local_n):
        rank = jax.process_index()
        return responses[rank * local_n:(rank + 1) * local_n]


class Rollout:
    def __init__(self):
        w = (np.arange(HIDDEN * VOCAB, dtype=np.float32).reshape(HIDDEN, VOCAB) * 0.37) % 1.0
        n = VOCAB // jax.process_count()
        r = jax.process_index()
        self.w_head = jax.make_array_from_process_local_data(VOCAB_SHARDS, w[:, r * n:(r + 1) * n], w.shape)

    def generate_sequences(self, prompts):
        return np.asarray(greedy_next(jnp.asarray(prompts.input_ids), self.w_head))


def validate(dataset, rollout, manager):
    world = jax.process_count()
    padded, pad = pad_dataproto_to_divisor(dataset, world)
    local = padded.chunk(world)[jax.process_index()]
    real = jax.process_index() * len(local.answers) + np.arange(len(local.answers)) < len(dataset.answers)
    batch = manager.preprocess_data(local)
    responses = rollout.generate_sequences(batch)
    mine = manager.postprocess_data(responses, len(local.answers))
    correct = np.sum((mine == local.answers) & real)
    totals = multihost_utils.process_allgather(np.array([correct, np.sum(real)], np.int64))
    return totals.sum(axis=0)


def main():
    correct, n = validate(load_val_dataset(), Rollout(), FSDPVLLMShardingManager())
    print("RESULT val_samples", int(n))
    print("RESULT val_accuracy", round(float(correct) / float(n), 4))


if __name__ == "__main__":
    main()
