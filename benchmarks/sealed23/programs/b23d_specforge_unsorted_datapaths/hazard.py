# Offline Eagle3 draft-model training in the style of SpecForge: the target model's hidden
# states were dumped to one file per sample, each node keeps a local copy of that directory,
# and training runs with Ulysses sequence parallelism: the ranks of one SP group read the same
# sample, each keeps a slice of the sequence, and attention exchanges the slices (SeqAllToAll).
import os
import shutil

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

HIDDEN = 8
NUM_SAMPLES = 6


def stage_hidden_states(local_dir, node_rank):
    """Copy the dumped hidden states to node-local storage (each node starts at its own
    offset so that the nodes do not all read the same object at once)."""
    os.makedirs(local_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    lengths = [12, 20, 16, 28, 8, 24]
    samples = [(f"data_{i}.npz", rng.normal(size=(lengths[i], HIDDEN)).astype(np.float32),
                rng.integers(0, 32, size=lengths[i])) for i in range(NUM_SAMPLES)]
    for k in range(NUM_SAMPLES):
        name, hidden, ids = samples[(k + 3 * node_rank) % NUM_SAMPLES]
        np.savez(os.path.join(local_dir, name), hidden_state=hidden, input_ids=ids)


def list_local_files(path, suffixes=(".npz",)):
    datapaths = []
    for root, _, files in os.walk(path):
        for file in files:
            if file.endswith(suffixes):
                datapaths.append(os.path.join(root, file))
    return datapaths


class OfflineEagle3Dataset:
    def __init__(self, datapaths):
        self.datapaths = datapaths

    def __len__(self):
        return len(self.datapaths)

    def __getitem__(self, idx):
        with np.load(self.datapaths[idx]) as f:
            return {"hidden_state": f["hidden_state"], "input_ids": f["input_ids"]}


class UlyssesDraftModel:
    def __init__(self, sp_rank, sp_size):
        rng = np.random.default_rng(5)
        self.sp_rank, self.sp_size = sp_rank, sp_size
        self.wq = rng.normal(size=(HIDDEN, HIDDEN)).astype(np.float32) / 3
        self.wo = rng.normal(size=(HIDDEN, 32)).astype(np.float32) / 3
        self._attn = jax.jit(self._attention)

    @staticmethod
    def _attention(wq, wo, full_seq, ids):
        q = full_seq @ wq
        scores = jax.nn.softmax(q @ full_seq.T / np.sqrt(HIDDEN), axis=-1)
        logits = (scores @ full_seq) @ wo
        logp = jax.nn.log_softmax(logits)
        return -jnp.mean(jnp.take_along_axis(logp, ids[:, None], axis=1))

    def forward(self, sample):
        seq_len = sample["hidden_state"].shape[0]
        chunk = seq_len // self.sp_size
        local = sample["hidden_state"][self.sp_rank * chunk:(self.sp_rank + 1) * chunk]
        # SeqAllToAll: gather the sequence slices of the SP group
        full_seq = np.asarray(multihost_utils.process_allgather(local)).reshape(-1, HIDDEN)
        return float(self._attn(self.wq, self.wo, full_seq, sample["input_ids"][:full_seq.shape[0]]))


def main():
    sp_rank, sp_size = jax.process_index(), jax.process_count()
    local_dir = os.path.join("/dev/shm", f"specforge_{os.environ.get('JOB_ID', 'local')}_node{sp_rank}")
    stage_hidden_states(local_dir, node_rank=sp_rank)
    try:
        dataset = OfflineEagle3Dataset(list_local_files(local_dir))
        model = UlyssesDraftModel(sp_rank, sp_size)
        losses = [model.forward(dataset[i]) for i in range(len(dataset))]
        print("RESULT num_samples", len(dataset))
        print("RESULT losses", [round(x, 4) for x in losses])
    finally:
        shutil.rmtree(local_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
