# Only global rank 0 builds the dataset index cache, but each node reads it from its own local disk
# Source: https://github.com/NVIDIA/Megatron-LM/issues/907
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import hashlib
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
PROCS_PER_NODE = 1  # the launcher places one process on each node
NODE_RANK = jax.process_index() // PROCS_PER_NODE
LOCAL_RANK = jax.process_index() % PROCS_PER_NODE
# node-local SSD scratch (not a shared file system): one folder per node
LOCAL_SCRATCH = os.path.join(tempfile.gettempdir(), "mcjax_sealed11_node_local_index",
                             os.environ.get("JOB_ID", "local"), f"node{NODE_RANK}")
SEQ_LEN, NUM_DOCS, SEED = 8, 40, 1234


def documents():
    rng = np.random.default_rng(7)  # the tokenized corpus is replicated on every node's disk
    return [rng.integers(0, 50, size=int(n)).astype(np.int32) for n in rng.integers(4, 20, size=NUM_DOCS)]


class GPTDataset:
    def __init__(self, docs, num_samples, path_to_cache):
        self.docs, self.num_samples = docs, num_samples
        desc = f"GPTDataset-{NUM_DOCS}-{SEQ_LEN}-{num_samples}-{SEED}"
        self.prefix = os.path.join(path_to_cache, hashlib.md5(desc.encode()).hexdigest())
        self.doc_index, self.shuffle_index = self._build_document_sample_shuffle_indices()
        self.tokens = np.concatenate([docs[i] for i in self.doc_index])

    def _build_document_sample_shuffle_indices(self):
        paths = [self.prefix + "-document_index.npy", self.prefix + "-shuffle_index.npy"]
        cache_hit = all(os.path.isfile(p) for p in paths)
        if not cache_hit and jax.process_index() == 0:
            os.makedirs(os.path.dirname(self.prefix), exist_ok=True)
            rng = np.random.RandomState(SEED)
            doc_index = np.concatenate([rng.permutation(len(self.docs)) for _ in range(2)]).astype(np.int32)
            np.save(paths[0], doc_index)
            np.save(paths[1], rng.permutation(self.num_samples).astype(np.int32))
        multihost_utils.sync_global_devices("gpt_dataset_indices")
        return np.load(paths[0]), np.load(paths[1])

    def __getitem__(self, idx):
        s = int(self.shuffle_index[idx]) * SEQ_LEN
        return self.tokens[s:s + SEQ_LEN + 1]


def main():
    dataset = GPTDataset(documents(), num_samples=32, path_to_cache=os.path.join(LOCAL_SCRATCH, "index-cache"))
    mesh = jax.make_mesh((jax.device_count(),), ("dp",), axis_types=(jax.sharding.AxisType.Auto,))
    sharding = NamedSharding(mesh, P("dp"))
    emb = jnp.asarray(np.random.default_rng(0).normal(0, 0.1, (50, 8)), jnp.float32)
    loss_fn = jax.jit(lambda e, b: jnp.mean((e[b[:, :-1]] - e[b[:, 1:]]) ** 2), out_shardings=NamedSharding(mesh, P()))
    per_proc, losses = 4, []
    for step in range(3):
        start = (step * jax.process_count() + jax.process_index()) * per_proc
        local = np.stack([dataset[i] for i in range(start, start + per_proc)])
        losses.append(float(loss_fn(emb, jax.make_array_from_process_local_data(sharding, local))))
    print("RESULT losses", [round(l, 6) for l in losses])


main()
