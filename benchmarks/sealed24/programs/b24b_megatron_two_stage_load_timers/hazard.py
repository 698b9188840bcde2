import os
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from functools import wraps

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

timers = defaultdict(list)


def timed(fn):
    @wraps(fn)
    def wrapped(*args, **kwargs):
        start = time.time()
        ret = fn(*args, **kwargs)
        timers[fn.__name__].append(time.time() - start)
        return ret
    return wrapped


@dataclass(frozen=True)
class ShardedTensorMetadata:
    key: str
    shape: tuple
    dist_group_rank: int


class TwoStageDataParallelLoadShardedStrategy:
    """Loads one checkpoint replica from storage and broadcasts it to the other ranks."""

    def __init__(self):
        self.dp_group_rank = jax.process_index()
        self.dp_world_size = jax.process_count()

    def load(self, sharded_state_dict, checkpoint_dir):
        self.maybe_init_gloo_group()
        metas = self.deduplicate_chunks(self._exchange_metadata(sharded_state_dict))
        loaded = self._exchange_loaded_tensors(metas, checkpoint_dir)
        self.summarize_load_times()
        return loaded

    @timed
    def maybe_init_gloo_group(self):
        multihost_utils.sync_global_devices("two_stage_gloo_group")

    def _exchange_metadata(self, sharded_state_dict):
        return [ShardedTensorMetadata(k, v, r) for r in range(self.dp_world_size)
                for k, v in sorted(sharded_state_dict.items())]

    @timed
    def deduplicate_chunks(self, ten_metas):
        by_key = {}
        for meta in ten_metas:
            if meta.key not in by_key or meta.dist_group_rank < by_key[meta.key].dist_group_rank:
                by_key[meta.key] = meta
        return [by_key[k] for k in sorted(by_key)]

    @timed
    def load_tensor_from_storage(self, checkpoint_dir, meta):
        return np.load(os.path.join(checkpoint_dir, f"{meta.key}.npy"))

    @timed
    def _exchange_loaded_tensors(self, metas, checkpoint_dir):
        out = {}
        for meta in metas:
            if self.dp_group_rank == meta.dist_group_rank:
                tensor = self.load_tensor_from_storage(checkpoint_dir, meta)
            else:
                tensor = np.zeros(meta.shape, np.float32)
            out[meta.key] = np.asarray(multihost_utils.broadcast_one_to_all(
                tensor, is_source=self.dp_group_rank == meta.dist_group_rank))
        return out

    def summarize_load_times(self):
        multihost_utils.sync_global_devices("summarize_load_times")
        summary = {}
        for key, times in sorted(timers.items()):
            times_sum = np.array([sum(times)], np.float32)
            gathered = np.asarray(multihost_utils.process_allgather(times_sum))
            summary[key] = (float(gathered.max()), float(gathered.mean()))
        if self.dp_group_rank == 0:
            for key, (mx, avg) in summary.items():
                print(f"{key}: max {mx:.4f}s, avg {avg:.4f}s")
        return summary


def save_checkpoint(checkpoint_dir, state):
    if jax.process_index() == 0:
        os.makedirs(checkpoint_dir, exist_ok=True)
        for key, value in state.items():
            np.save(os.path.join(checkpoint_dir, f"{key}.npy"), value)
    multihost_utils.sync_global_devices("checkpoint_saved")


def main():
    rng = np.random.default_rng(0)
    state = {"decoder.layers.0.mlp.weight": rng.normal(size=(8, 4)).astype(np.float32),
             "decoder.layers.0.attn.qkv": rng.normal(size=(4, 12)).astype(np.float32),
             "embedding.word_embeddings": rng.normal(size=(16, 4)).astype(np.float32)}
    checkpoint_dir = os.path.join(tempfile.gettempdir(), f"two_stage_ckpt_{os.environ.get('JOB_ID', 'local')}")
    save_checkpoint(checkpoint_dir, state)
    strategy = TwoStageDataParallelLoadShardedStrategy()
    loaded = strategy.load({k: v.shape for k, v in state.items()}, checkpoint_dir)
    checksum = np.array([sum(float(v.sum()) for v in loaded.values())], np.float32)
    total = np.asarray(multihost_utils.process_allgather(checksum))
    print("RESULT loaded_keys", sorted(loaded))
    print("RESULT checksum", round(float(total.sum()), 4))


if __name__ == "__main__":
    main()
