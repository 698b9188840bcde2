# Trainer resume: the run's output_dir carries a random suffix drawn on each process, so only one rank finds the checkpoint
# Source: https://github.com/huggingface/transformers/issues/28270 (port of the HF Trainer resume_from_checkpoint mismatch to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import json
import os
import random
import re
import string
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
MESH = jax.make_mesh((jax.device_count(),), ("data",))
REPLICATED = NamedSharding(MESH, P())
BATCH = NamedSharding(MESH, P("data"))


def unique_run_suffix(length: int = 8) -> str:
    return "".join(random.choices(string.ascii_lowercase + string.digits, k=length))


@dataclasses.dataclass
class TrainingArguments:
    output_root: str
    run_name: str = "sft"
    max_steps: int = 4
    save_steps: int = 4
    learning_rate: float = 0.1

    def __post_init__(self):
        self.output_dir = os.path.join(self.output_root, f"{self.run_name}-{unique_run_suffix()}")
        os.makedirs(self.output_dir, exist_ok=True)


def get_last_checkpoint(folder: str):
    found = [d for d in os.listdir(folder) if re.fullmatch(r"checkpoint-\d+", d)]
    if not found:
        return None
    return os.path.join(folder, max(found, key=lambda d: int(d.split("-")[1])))


@jax.jit
def train_step(w, x, y, lr):
    grad = jax.grad(lambda w: jnp.mean((x @ w - y) ** 2))(w)
    return w - lr * grad


class Trainer:
    def __init__(self, args: TrainingArguments, init_w: np.ndarray):
        self.args = args
        self.w = jax.device_put(init_w, REPLICATED)
        self.global_step = 0
        self.rng = np.random.default_rng(7 + jax.process_index())

    def _save_checkpoint(self):
        ckpt = os.path.join(self.args.output_dir, f"checkpoint-{self.global_step}")
        if jax.process_index() == 0:
            os.makedirs(ckpt, exist_ok=True)
            np.save(os.path.join(ckpt, "weights.npy"), np.asarray(self.w.addressable_data(0)))
            with open(os.path.join(ckpt, "trainer_state.json"), "w") as f:
                json.dump({"global_step": self.global_step}, f)
        multihost_utils.sync_global_devices(f"save-{self.global_step}")

    def _load_from_checkpoint(self, ckpt: str):
        with open(os.path.join(ckpt, "trainer_state.json")) as f:
            self.global_step = json.load(f)["global_step"]
        w = np.load(os.path.join(ckpt, "weights.npy"))
        self.w = jax.device_put(multihost_utils.broadcast_one_to_all(w), REPLICATED)

    def train(self, resume_from_checkpoint=None):
        if resume_from_checkpoint is not None:
            self._load_from_checkpoint(resume_from_checkpoint)
        while self.global_step < self.args.max_steps:
            x = self.rng.normal(size=(4, 6)).astype(np.float32)
            y = x[:, :1].sum(axis=1).astype(np.float32)
            self.w = train_step(self.w, jax.make_array_from_process_local_data(BATCH, x),
                                jax.make_array_from_process_local_data(BATCH, y), self.args.learning_rate)
            self.global_step += 1
            if self.global_step % self.args.save_steps == 0:
                self._save_checkpoint()
        return np.asarray(self.w.addressable_data(0))


def main():
    root = os.path.join(tempfile.gettempdir(), "hf_runs_" + os.environ.get("JOB_ID", "local"))
    args = TrainingArguments(output_root=root)
    init_w = np.zeros((6,), np.float32)
    Trainer(args, init_w).train()              # stage 1: short warmup run
    args.max_steps = 8                         # stage 2: continue the same run from its last checkpoint
    resume = get_last_checkpoint(args.output_dir)
    final_w = Trainer(args, init_w).train(resume_from_checkpoint=resume)
    print("RESULT resumed", resume is not None)
    print("RESULT weights", np.round(final_w, 4).tolist())


if __name__ == "__main__":
    main()
