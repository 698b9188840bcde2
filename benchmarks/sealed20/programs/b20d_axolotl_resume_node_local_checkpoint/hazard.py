# Multi-node fine-tuning with periodic checkpoints and automatic resume: each node writes to its
# own local output_dir (no shared storage); the job is preempted after the first stage and the
# second stage resumes from the last checkpoint found in output_dir.
import glob
import os
import shutil
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TrainingArguments:
    output_dir: str
    max_steps: int = 8
    save_steps: int = 4
    batch_size: int = 8
    lr: float = 0.1


def node_local_output_dir():
    node_rank = jax.process_index()
    return os.path.join(tempfile.gettempdir(), f"{os.environ.get('JOB_ID', 'job')}-node{node_rank}", "output")


def get_last_checkpoint(folder):
    ckpts = sorted(glob.glob(os.path.join(folder, "checkpoint-*.npz")),
                   key=lambda p: int(p.rsplit("-", 1)[1].split(".")[0]))
    return ckpts[-1] if ckpts else None


class Trainer:
    def __init__(self, args):
        self.args = args
        self.mesh = Mesh(np.array(jax.devices()), ("dp",))
        self.sharding = NamedSharding(self.mesh, P("dp"))
        self.params = jnp.zeros(4)
        self.global_step = 0
        self.step_fn = jax.jit(jax.value_and_grad(lambda w, x, y: jnp.mean((x @ w - y) ** 2)))

    def is_world_process_zero(self):
        return jax.process_index() == 0

    def batch(self, step):
        rng = np.random.default_rng(1000 * step + jax.process_index())
        x = rng.normal(size=(self.args.batch_size, 4)).astype(np.float32)
        return x, (x @ np.array([1.0, -1.0, 2.0, 0.5], dtype=np.float32)).astype(np.float32)

    def save_checkpoint(self):
        if self.is_world_process_zero():
            os.makedirs(self.args.output_dir, exist_ok=True)
            path = os.path.join(self.args.output_dir, f"checkpoint-{self.global_step}.npz")
            np.savez(path, params=np.asarray(self.params), global_step=self.global_step)

    def load_checkpoint(self, resume_from_checkpoint):
        path = get_last_checkpoint(self.args.output_dir)
        if path is None:
            raise ValueError(f"No valid checkpoint found in output directory ({self.args.output_dir})")
        state = np.load(path)
        self.params = jnp.asarray(state["params"])
        self.global_step = int(state["global_step"])

    def train(self, stop_at=None, resume_from_checkpoint=False):
        if resume_from_checkpoint:
            self.load_checkpoint(resume_from_checkpoint)
        while self.global_step < (stop_at or self.args.max_steps):
            x, y = self.batch(self.global_step)
            gx = jax.make_array_from_process_local_data(self.sharding, x)
            gy = jax.make_array_from_process_local_data(self.sharding, y)
            loss, g = self.step_fn(self.params, gx, gy)
            self.params = self.params - self.args.lr * g
            self.global_step += 1
            if self.global_step % self.args.save_steps == 0:
                self.save_checkpoint()
        return float(loss)


def main():
    out = node_local_output_dir()
    shutil.rmtree(os.path.dirname(out), ignore_errors=True)
    args = TrainingArguments(output_dir=out)
    Trainer(args).train(stop_at=5)
    print("stage 1 preempted; resuming")
    trainer = Trainer(args)
    loss = trainer.train(resume_from_checkpoint=True)
    print("RESULT global_step", trainer.global_step)
    print("RESULT final_loss", round(loss, 4))
    print("RESULT params", [round(float(v), 4) for v in trainer.params])
    shutil.rmtree(os.path.dirname(out), ignore_errors=True)


if __name__ == "__main__":
    main()
