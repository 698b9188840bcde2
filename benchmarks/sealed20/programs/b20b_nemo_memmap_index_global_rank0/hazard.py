# SFT-style data pipeline in the manner of NeMo's TextMemMapDataset: each node stages the JSONL
# training file onto its local scratch disk, an offsets index (.idx.npy) is built once and then
# memory-mapped by every rank; training is data parallel with all-reduced gradients.
import json
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

JOB_ID = os.environ.get("JOB_ID", "local")
SEQ_LEN = 12
VOCAB = 32


def node_scratch_dir():
    # one process per host here; each host has its own scratch disk
    path = os.path.join("/tmp", f"{JOB_ID}-host{jax.process_index()}", "data")
    os.makedirs(path, exist_ok=True)
    return path


def stage_jsonl(dst_dir, num_docs=48):
    rng = np.random.default_rng(7)
    path = os.path.join(dst_dir, "train.jsonl")
    with open(path, "w") as f:
        for i in range(num_docs):
            n = int(rng.integers(SEQ_LEN // 2, SEQ_LEN + 4))
            f.write(json.dumps({"id": i, "tokens": rng.integers(1, VOCAB, size=n).tolist()}) + "\n")
    return path


def build_index_files(jsonl_path):
    offsets = [0]
    with open(jsonl_path, "rb") as f:
        for line in f:
            offsets.append(offsets[-1] + len(line))
    np.save(jsonl_path + ".idx.npy", np.asarray(offsets[:-1], dtype=np.int64))


class TextMemMapDataset:
    def __init__(self, jsonl_path, global_rank, local_rank):
        if global_rank == 0:
            build_index_files(jsonl_path)
        multihost_utils.sync_global_devices("memmap_index_built")
        self.offsets = np.load(jsonl_path + ".idx.npy", mmap_mode="r")
        self.data = np.memmap(jsonl_path, dtype=np.uint8, mode="r")

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, idx):
        start = int(self.offsets[idx])
        end = int(self.offsets[idx + 1]) if idx + 1 < len(self.offsets) else len(self.data)
        tokens = json.loads(bytes(self.data[start:end]))["tokens"][:SEQ_LEN]
        return np.pad(np.asarray(tokens, dtype=np.int32), (0, SEQ_LEN - len(tokens)))


def loss_fn(emb, tokens):
    h = emb[tokens[:, :-1]]
    logits = h @ emb.T
    logp = jax.nn.log_softmax(logits)
    mask = (tokens[:, 1:] > 0).astype(jnp.float32)
    nll = -jnp.take_along_axis(logp, tokens[:, 1:, None], axis=-1)[..., 0]
    return jnp.sum(nll * mask) / jnp.maximum(mask.sum(), 1.0)


def main():
    rank, world = jax.process_index(), jax.process_count()
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    scratch = node_scratch_dir()
    ds = TextMemMapDataset(stage_jsonl(scratch), global_rank=rank, local_rank=local_rank)

    emb = jax.random.normal(jax.random.PRNGKey(0), (VOCAB, 16)) * 0.1
    grad_fn = jax.jit(jax.value_and_grad(loss_fn))
    batch_size = 4
    my_indices = list(range(rank, len(ds), world))
    for step in range(len(my_indices) // batch_size):
        batch = np.stack([ds[i] for i in my_indices[step * batch_size:(step + 1) * batch_size]])
        loss, g = grad_fn(emb, batch)
        g = np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)
        emb = emb - 0.5 * g
    losses = np.asarray(multihost_utils.process_allgather(np.float32(loss)))
    shutil.rmtree(os.path.dirname(scratch), ignore_errors=True)
    print("RESULT num_samples", len(ds))
    print("RESULT mean_final_loss", round(float(losses.mean()), 4))
    print("RESULT emb_checksum", round(float(jnp.sum(jnp.abs(emb))), 4))


if __name__ == "__main__":
    main()
