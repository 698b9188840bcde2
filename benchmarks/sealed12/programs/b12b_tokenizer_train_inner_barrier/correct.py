# An ASR recipe trains its BPE tokenizer on the main process via run_on_main, then every rank loads it and trains
# Source: https://github.com/speechbrain/speechbrain/pull/2633
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import collections
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

WORKDIR = os.path.join(tempfile.gettempdir(), "mcjax_sealed12_tokenizer_train_inner_barrier",
                       os.environ.get("JOB_ID", "job"))
TRANSCRIPTS = ["the cat sat", "a dog ran far", "the bird sang", "cats and dogs", "a far bird", "dogs sat"]
SEQ, DIM, LR = 10, 8, 0.2
MESH = Mesh(np.array(jax.devices()), ("data",))


def if_main_process():
    return jax.process_index() == 0


def ddp_barrier(name):
    multihost_utils.sync_global_devices(name)


def run_on_main(func, args=()):
    """Run func on the main process only, then let every process pass one barrier."""
    if if_main_process():
        func(*args)
    ddp_barrier("run_on_main")


class SentencePiece:
    def __init__(self, model_dir, annotation_lines):
        self.text_file = os.path.join(model_dir, "train.txt")
        self.model_file = os.path.join(model_dir, "char_bpe.model")
        self.lines = annotation_lines
        run_on_main(self._train_BPE)  # every process takes part in run_on_main's barrier
        with open(self.model_file) as f:
            self.vocab = json.load(f)

    def _csv2text(self):
        with open(self.text_file, "w") as f:
            f.write("\n".join(self.lines))

    def _train_BPE(self):
        """Main process only: dump the text, count units, write the model."""
        if os.path.isfile(self.model_file):
            return  # already trained by an earlier run
        self._csv2text()
        with open(self.text_file) as f:
            counts = collections.Counter(f.read().replace("\n", " "))
        units = ["<unk>", "<bos>", "<eos>"] + sorted(counts, key=lambda c: (-counts[c], c))
        with open(self.model_file, "w") as f:
            json.dump({u: i for i, u in enumerate(units)}, f)

    def encode(self, text):
        ids = [self.vocab["<bos>"]] + [self.vocab.get(c, 0) for c in text] + [self.vocab["<eos>"]]
        return (ids + [0] * SEQ)[:SEQ + 1]


def shard(a):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, P("data")), a)


@jax.jit
def train_step(emb, tokens):
    def loss_fn(e):
        logits = e[tokens[:, :-1]] @ e.T
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1))
    loss, g = jax.value_and_grad(loss_fn)(emb)
    return emb - LR * g, loss


def main():
    rank, world = jax.process_index(), jax.process_count()
    if if_main_process():
        os.makedirs(WORKDIR, exist_ok=True)
    ddp_barrier("workdir")
    tokenizer = SentencePiece(WORKDIR, TRANSCRIPTS)
    vocab_size = len(tokenizer.vocab)
    emb = jnp.asarray(np.random.default_rng(0).normal(0, 0.3, (vocab_size, DIM)).astype(np.float32))
    mine = TRANSCRIPTS[rank::world]
    for epoch in range(2):
        for text in mine:
            emb, loss = train_step(emb, shard(np.array([tokenizer.encode(text)], np.int32)))
    print("RESULT vocab_size", vocab_size)
    print("RESULT loss", round(float(loss), 5))


main()
