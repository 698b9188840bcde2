# An OCR evaluation gathers each process's decoded predictions as pickled objects to score them on every process
# Source: https://github.com/PaddlePaddle/Paddle/pull/44718
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os
import pickle

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

ALPHABET = "abcdefghijklmnopqrstuvwxyz"
SAMPLES_PER_PROC, MAX_CHARS = 5, 12


def all_gather_object(obj):
    """Gather one picklable object from every process, in process order (padded to the largest pickle)."""
    payload = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    sizes = np.asarray(multihost_utils.process_allgather(np.int64(payload.size)))
    padded = np.zeros(int(sizes.max()), np.uint8)
    padded[:payload.size] = payload
    gathered = np.asarray(multihost_utils.process_allgather(padded))  # (num_processes, max nbytes)
    return [pickle.loads(row[:n].tobytes()) for row, n in zip(gathered, sizes)]


@jax.jit
def greedy_decode(logits):
    return jnp.argmax(logits, axis=-1)


def ctc_collapse(ids):
    out, prev = [], -1
    for i in ids:
        if i != prev and i != 0:
            out.append(ALPHABET[i - 1])
        prev = i
    return "".join(out)


def load_shard():
    """Each process owns its own slice of the validation images (line crops of different widths)."""
    rng = np.random.default_rng(7 + jax.process_index())
    n_chars = 4 + 3 * jax.process_index()
    labels = ["".join(rng.choice(list(ALPHABET), n_chars)) for _ in range(SAMPLES_PER_PROC)]
    logits = np.full((SAMPLES_PER_PROC, MAX_CHARS * 2, len(ALPHABET) + 1), -5.0, np.float32)
    for s, label in enumerate(labels):
        for t in range(MAX_CHARS * 2):
            c = t // 2
            logits[s, t, (ALPHABET.index(label[c]) + 1) if c < len(label) and t % 2 == 0 else 0] = 5.0
    return labels, logits


def edit_distance(a, b):
    d = np.arange(len(b) + 1)
    for i, ca in enumerate(a, 1):
        prev, d[0] = d[0], i
        for j, cb in enumerate(b, 1):
            prev, d[j] = d[j], min(d[j] + 1, d[j - 1] + 1, prev + (ca != cb))
    return int(d[-1])


def evaluate():
    labels, logits = load_shard()
    ids = np.asarray(greedy_decode(jnp.asarray(logits)))
    records = [{"sample": f"p{jax.process_index()}_{i}", "pred": ctc_collapse(row), "label": lab}
               for i, (row, lab) in enumerate(zip(ids.tolist(), labels))]
    per_process = all_gather_object(records)
    merged = [r for part in per_process for r in part]
    errors = sum(edit_distance(r["pred"], r["label"]) for r in merged)
    chars = sum(len(r["label"]) for r in merged)
    return merged, errors / chars


merged, cer = evaluate()
print("RESULT n_records", len(merged))
print("RESULT cer", round(cer, 5))
print("RESULT first_last", merged[0]["sample"], merged[-1]["sample"])
