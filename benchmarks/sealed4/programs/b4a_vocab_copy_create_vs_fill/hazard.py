# Host 0 copies the trained vocab model to the shared path; other hosts load it as soon as the file exists
# Source: https://github.com/google/flax/commit/a4b095f373a31b188d51178b1899737d34e1d399
# Written for the mcjax sealed4 evaluation (not copied); run as 2 processes by benchmarks/sealed4/run_pair.py.
import collections
import os
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

WORDS = [f"w{i:04d}" for i in range(1500)]
MODEL_DIR = os.path.join(tempfile.gettempdir(), "b4a_wmt_" + os.environ.get("JOB_ID", "job"))


def raw_corpus(num_sentences: int = 1000):
    rng = np.random.default_rng(1234)  # the same dataset on every host
    for ids in rng.zipf(1.3, size=(num_sentences, 12)) % len(WORDS):
        yield " ".join(WORDS[i] for i in ids)


def gfile_copy(src: str, dst: str, chunk: int = 128):
    """Streams src to dst the way a remote filesystem copy does (the file exists before it is full)."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        while data := fin.read(chunk):
            fout.write(data)
            fout.flush()
            time.sleep(0.02)


def train_vocab(dataset, vocab_size: int, abs_model_path: str) -> str:
    """Trains a word-piece style vocab on every host; host 0 publishes it."""
    counts = collections.Counter(w for line in dataset for w in line.split())
    pieces = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][: vocab_size - 2]
    with tempfile.NamedTemporaryFile("w", delete=False, suffix=".vocab") as model_fp:
        model_fp.write("\n".join(["<pad>", "<unk>"] + pieces))
    if jax.process_index() == 0:
        gfile_copy(model_fp.name, abs_model_path)
    else:
        while not os.path.exists(abs_model_path):
            time.sleep(0.05)
        time.sleep(0.05)
    return abs_model_path


def load_or_train_tokenizer(vocab_path: str, vocab_size: int):
    if not os.path.exists(vocab_path):
        train_vocab(raw_corpus(), vocab_size, vocab_path)
    with open(vocab_path) as f:
        pieces = f.read().split("\n")
    return {p: i for i, p in enumerate(pieces)}


def tokenize(vocab, sentences):
    return np.array([[vocab.get(w, 1) for w in s.split()] for s in sentences], np.int32)


if jax.process_index() == 0:
    os.makedirs(MODEL_DIR, exist_ok=False)
multihost_utils.sync_global_devices("model_dir")
vocab = load_or_train_tokenizer(os.path.join(MODEL_DIR, "sentencepiece_model"), vocab_size=1024)

mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
sentences = list(raw_corpus(64))[jax.process_index()::jax.process_count()]
tokens = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), tokenize(vocab, sentences))
table = np.random.default_rng(0).normal(size=(1024, 16)).astype(np.float32)
embed = jax.make_array_from_callback(table.shape, NamedSharding(mesh, P()), lambda idx: table[idx])


@jax.jit
def loss_fn(table, ids):
    return jnp.mean(jnp.square(table[ids]))


print("RESULT vocab", len(vocab))
print("RESULT loss", round(float(loss_fn(embed, tokens)), 5))
