import json
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainingArguments:
    output_dir: str
    max_steps: int = 6
    save_steps: int = 3
    learning_rate: float = 0.1
    nproc_per_node: int = 1
    save_on_each_node: bool = False
    max_shard_size: int = 16

    @property
    def process_index(self):
        return jax.process_index()

    @property
    def node_rank(self):
        return self.process_index // self.nproc_per_node

    @property
    def local_rank(self):
        return self.process_index % self.nproc_per_node

    @property
    def should_save(self):
        if self.save_on_each_node:
            return self.local_rank == 0
        return self.process_index == 0


def barrier(name):
    multihost_utils.sync_global_devices(name)


class FlexCheckpointSaver:
    def __init__(self, args):
        self.args = args

    def gather_full_state_dict(self, sharded):
        # each rank holds one slice of every parameter (sharding stage1); merge them for HF format
        return {k: np.concatenate(list(np.asarray(multihost_utils.process_allgather(v))), axis=0)
                for k, v in sorted(sharded.items())}

    def save_hf(self, state_dict, output_dir):
        os.makedirs(output_dir, exist_ok=True)
        index, shard, shard_id = {"weight_map": {}}, {}, 0
        for name, value in state_dict.items():
            shard[name] = value
            if sum(v.size for v in shard.values()) >= self.args.max_shard_size:
                shard_id = self._write_shard(output_dir, shard, shard_id, index)
                shard = {}
        if shard:
            shard_id = self._write_shard(output_dir, shard, shard_id, index)
        barrier(f"save_hf_shards_{output_dir}")
        with open(os.path.join(output_dir, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, sort_keys=True)
        return shard_id

    def _write_shard(self, output_dir, shard, shard_id, index):
        fname = f"model-{shard_id:05d}.npz"
        np.savez(os.path.join(output_dir, fname), **shard)
        for name in shard:
            index["weight_map"][name] = fname
        return shard_id + 1


class Trainer:
    def __init__(self, args):
        self.args = args
        rng = np.random.default_rng(0)
        full = {"embed": rng.normal(size=(8, 4)).astype(np.float32),
                "lm_head": rng.normal(size=(4, 8)).astype(np.float32)}
        n, r = jax.process_count(), args.process_index
        self.sharded = {k: np.array_split(v, n, axis=0)[r] for k, v in full.items()}
        self.saver = FlexCheckpointSaver(args)
        self.saved = []

    def training_step(self, step):
        rng = np.random.default_rng(100 * step + self.args.process_index)
        grads = {k: rng.normal(size=v.shape).astype(np.float32) for k, v in self.sharded.items()}
        grads = {k: np.asarray(multihost_utils.process_allgather(g)).mean(0) for k, g in grads.items()}
        self.sharded = {k: v - self.args.learning_rate * grads[k] for k, v in self.sharded.items()}

    def save_model(self, step):
        output_dir = os.path.join(self.args.output_dir, f"checkpoint-{step}")
        state_dict = self.saver.gather_full_state_dict(self.sharded)
        if self.args.should_save:
            self.saver.save_hf(state_dict, output_dir)
            self.saved.append(step)
        return state_dict

    def train(self):
        state_dict = None
        for step in range(1, self.args.max_steps + 1):
            self.training_step(step)
            if step % self.args.save_steps == 0:
                state_dict = self.save_model(step)
        return state_dict


def main():
    out = os.path.join(tempfile.gettempdir(), f"pf_{os.environ.get('JOB_ID', 'local')}")
    args = TrainingArguments(output_dir=out)
    trainer = Trainer(args)
    state_dict = trainer.train()
    print(f"rank {args.process_index} (node {args.node_rank}) saved {trainer.saved}")
    print("RESULT embed_sum", round(float(state_dict["embed"].sum()), 4))
    print("RESULT lm_head_sum", round(float(state_dict["lm_head"].sum()), 4))
    barrier("end_of_training")
    print("RESULT done", True)


if __name__ == "__main__":
    main()
