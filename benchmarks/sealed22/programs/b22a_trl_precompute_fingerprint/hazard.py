# DPO with precomputed reference log-probs: before training, the reference model scores every
# (chosen, rejected) pair once; the scores are cached to a file named by a fingerprint of the
# dataset and of the model weights, so later runs / passes reuse them. Parameters are sharded
# FSDP-style: each process holds one slice of every weight.
import hashlib
import os
import shutil
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM, SEQ = 16, 8, 5
CACHE_DIR = os.path.join(tempfile.gettempdir(), f"dpo_cache_{os.environ.get('JOB_ID', 'local')}")


def gather_for_metrics(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x))).reshape(-1)


def hash_module(state_dict):
    h = hashlib.sha256()
    for name, tensor in sorted(state_dict.items()):
        h.update(name.encode())
        h.update(np.asarray(tensor).tobytes())
    return h.hexdigest()


class PreferenceDataset:
    def __init__(self, name, num_rows=8, seed=5):
        rng = np.random.default_rng(seed)
        self.chosen = rng.integers(1, VOCAB, size=(num_rows, SEQ)).astype(np.int32)
        self.rejected = rng.integers(1, VOCAB, size=(num_rows, SEQ)).astype(np.int32)
        self._fingerprint = hashlib.sha256(self.chosen.tobytes() + self.rejected.tobytes()).hexdigest()[:16]
        self.name = name

    def shard(self, rank, world):
        return self.chosen[rank::world], self.rejected[rank::world]


class ShardedLM:
    """Each process owns rows [rank::world] of the output projection (FSDP-style)."""

    def __init__(self, seed=0):
        rank, world = jax.process_index(), jax.process_count()
        full = np.asarray(jax.random.normal(jax.random.PRNGKey(seed), (DIM, VOCAB))) * 0.3
        self.emb = np.asarray(jax.random.normal(jax.random.PRNGKey(seed + 1), (VOCAB, DIM))) * 0.3
        self.local_out = full[rank::world]

    def state_dict(self):
        return {"emb": self.emb, "out_shard": self.local_out}

    def full_out(self):
        shards = np.asarray(multihost_utils.process_allgather(self.local_out))
        out = np.empty((DIM, VOCAB), np.float32)
        for r in range(shards.shape[0]):
            out[r::shards.shape[0]] = shards[r]
        return out


@jax.jit
def seq_logp(emb, out, tokens):
    logp = jax.nn.log_softmax(emb[tokens] @ out, -1)
    return jnp.take_along_axis(logp[:, :-1], tokens[:, 1:, None], -1)[..., 0].sum(-1)


class DPOTrainer:
    def __init__(self, model, is_main_process):
        self.model = model
        self.is_main_process = is_main_process

    def _precompute_ref_logps(self, dataset):
        model_hash = hash_module(self.model.state_dict())
        fingerprint = hashlib.sha256((dataset._fingerprint + model_hash).encode()).hexdigest()[:16]
        cache_file = os.path.join(CACHE_DIR, f"{dataset.name}-{fingerprint}.npz")
        if os.path.exists(cache_file):
            return dict(np.load(cache_file))
        out = self.model.full_out()
        chosen, rejected = dataset.shard(jax.process_index(), jax.process_count())
        ref_chosen = gather_for_metrics(seq_logp(self.model.emb, out, chosen))
        ref_rejected = gather_for_metrics(seq_logp(self.model.emb, out, rejected))
        if self.is_main_process:
            os.makedirs(CACHE_DIR, exist_ok=True)
            np.savez(cache_file, ref_chosen=ref_chosen, ref_rejected=ref_rejected)
        multihost_utils.sync_global_devices("precompute_ref_logps")
        return dict(np.load(cache_file))


def main():
    rank = jax.process_index()
    trainer = DPOTrainer(ShardedLM(), is_main_process=rank == 0)
    train_ref = trainer._precompute_ref_logps(PreferenceDataset("train"))
    eval_ref = trainer._precompute_ref_logps(PreferenceDataset("eval", seed=6))
    margin = float((train_ref["ref_chosen"] - train_ref["ref_rejected"]).mean())
    print("RESULT train_ref_margin", round(margin, 4))
    print("RESULT eval_rows", int(eval_ref["ref_chosen"].shape[0]))
    multihost_utils.sync_global_devices("done")
    if rank == 0:
        shutil.rmtree(CACHE_DIR, ignore_errors=True)


if __name__ == "__main__":
    main()
