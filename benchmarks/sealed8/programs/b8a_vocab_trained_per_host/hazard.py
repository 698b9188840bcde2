# Every host trains the vocabulary on its own data shard and copies it to the shared vocab path
# Source: https://github.com/google/flax/commit/b937bc9dd6e5affebddcb0c4be4a0f22c4e64656
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import collections
import os
import shutil
import tempfile
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

WORKDIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed8_vocab", os.environ.get("JOB_ID", "local"))
WORDS = ["haus", "katze", "hund", "baum", "wasser", "licht", "stadt", "fluss", "berg", "wald",
         "strasse", "zug", "schiff", "feld", "garten", "schule", "brot", "milch", "stern", "mond"]


def raw_wmt_datasets(shard_idx: int, shard_count: int, num_files: int = 7):
    """Files are split over hosts; a host reads every example of its files."""
    examples = []
    for file_idx in range(shard_idx, num_files, shard_count):
        rng = np.random.default_rng(file_idx)
        for _ in range(400):
            examples.append(" ".join(WORDS[i] for i in rng.integers(0, len(WORDS) - file_idx, size=12)))
    return examples


def train_sentencepiece(dataset, vocab_size: int, model_path: str) -> str:
    counts = collections.Counter()
    for sentence in dataset:
        for word in sentence.split():
            for n in range(1, len(word) + 1):
                counts[word[:n]] += 1
    pieces = [p for p, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))][:vocab_size]
    with tempfile.NamedTemporaryFile("w", delete=False, prefix="sp_tmp", suffix=".model") as model_fp:
        model_fp.write("\n".join(["<pad>", "<eos>", "<unk>"] + pieces))
    shutil.copy(model_fp.name, model_path)
    return os.path.abspath(model_path)


class SentencePieceTokenizer:
    def __init__(self, model_path: str):
        with open(model_path) as f:
            self.pieces = f.read().split("\n")
        self.index = {p: i for i, p in enumerate(self.pieces)}

    def tokenize(self, sentence: str):
        return [self.index.get(w, 2) for w in sentence.split()] + [1]


def get_wmt_datasets(vocab_path: str, target_vocab_size: int = 64):
    train_data = raw_wmt_datasets(jax.process_index(), jax.process_count())
    try:
        tokenizer = SentencePieceTokenizer(vocab_path)
    except FileNotFoundError:
        abs_vocab_path = train_sentencepiece(train_data, target_vocab_size, vocab_path)
        tokenizer = SentencePieceTokenizer(abs_vocab_path)
    batch = np.array([tokenizer.tokenize(s)[:8] for s in train_data[:4]], np.int32)
    return tokenizer, batch


def main():
    os.makedirs(WORKDIR, exist_ok=True)
    tokenizer, batch = get_wmt_datasets(os.path.join(WORKDIR, "wmt_sentencepiece_model"))
    mesh = jax.make_mesh((jax.device_count(),), ("data",))
    emb = np.random.default_rng(0).normal(size=(80, 4)).astype(np.float32)
    emb = jax.make_array_from_process_local_data(NamedSharding(mesh, P()), emb)
    tokens = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), batch)
    loss = jax.jit(lambda e, t: jnp.mean((jax.nn.one_hot(t, e.shape[0]) @ e) ** 2))(emb, tokens)
    print("RESULT vocab", len(tokenizer.pieces), " ".join(tokenizer.pieces[3:9]))
    print("RESULT encoded", tokenizer.tokenize("haus katze stern mond"))
    print("RESULT loss", round(float(loss), 5))
    multihost_utils.sync_global_devices("done")


main()
