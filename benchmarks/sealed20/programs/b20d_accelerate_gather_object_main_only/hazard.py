# Distributed batch inference ("grading"): the prompts are split between processes, every process
# runs the model on its share, and the generated outputs are collected for printing and saving.
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

PROMPTS = [f"question {i}: is {i} * 7 divisible by 3?" for i in range(12)]
VOCAB = ["yes", "no", "maybe", "unsure"]


class DistributedState:
    def __init__(self):
        self.process_index = jax.process_index()
        self.num_processes = jax.process_count()
        self.is_main_process = self.process_index == 0

    def split_between_processes(self, items):
        per = -(-len(items) // self.num_processes)
        return items[self.process_index * per:(self.process_index + 1) * per]

    def wait_for_everyone(self):
        multihost_utils.sync_global_devices("wait_for_everyone")


def gather_object(obj):
    payload = np.frombuffer(json.dumps(obj).encode(), dtype=np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.int32(payload.size)))
    padded = np.zeros(int(sizes.max()), dtype=np.uint8)
    padded[:payload.size] = payload
    rows = np.asarray(multihost_utils.process_allgather(padded))
    out = []
    for row, n in zip(rows, sizes):
        out.extend(json.loads(bytes(row[:n]).decode()))
    return out


def encode(prompts, dim=16):
    feats = np.zeros((len(prompts), dim), dtype=np.float32)
    for i, p in enumerate(prompts):
        for j, ch in enumerate(p.encode()):
            feats[i, (ch + j) % dim] += 1.0
    return feats


@jax.jit
def grade_batch(w, feats):
    return jnp.argmax(jnp.tanh(feats @ w), axis=-1)


def grade(distributed_state):
    w = jax.random.normal(jax.random.PRNGKey(3), (16, len(VOCAB)))
    local_prompts = distributed_state.split_between_processes(PROMPTS)
    labels = np.asarray(grade_batch(w, encode(local_prompts)))
    txt_out = [f"{p} -> {VOCAB[int(k)]}" for p, k in zip(local_prompts, labels)]
    if distributed_state.is_main_process:
        all_outputs = gather_object(txt_out)
        print(all_outputs[0])
        print(all_outputs[1])
    distributed_state.wait_for_everyone()
    return txt_out


def main():
    state = DistributedState()
    local = grade(state)
    counts = np.zeros(len(VOCAB), dtype=np.int32)
    for line in local:
        counts[VOCAB.index(line.rsplit(" ", 1)[1])] += 1
    totals = np.asarray(multihost_utils.process_allgather(counts)).sum(axis=0)
    print("RESULT answer_counts", dict(zip(VOCAB, totals.tolist())))


if __name__ == "__main__":
    main()
