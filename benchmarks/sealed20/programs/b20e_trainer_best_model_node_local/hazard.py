# Trainer-style fine-tuning loop with periodic evaluation, checkpointing and load_best_model_at_end
# (as in transformers.Trainer). Every machine writes outputs under its own local output_dir.
import os
import shutil
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
    max_steps: int = 24
    eval_steps: int = 6
    save_total_limit: int = 2
    learning_rate: float = 0.3
    load_best_model_at_end: bool = True
    save_on_each_node: bool = False

    @property
    def process_index(self):
        return jax.process_index()

    @property
    def local_process_index(self):
        return int(os.environ.get("LOCAL_RANK", 0))

    @property
    def should_save(self):
        if self.save_on_each_node:
            return self.local_process_index == 0
        return self.process_index == 0


def loss_fn(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


class Trainer:
    def __init__(self, args, train_data, eval_data):
        self.args = args
        self.train_data, self.eval_data = train_data, eval_data
        self.w = np.zeros(train_data[0].shape[-1], np.float32)
        self.best_metric, self.best_model_checkpoint = None, None
        self._grad = jax.jit(jax.grad(loss_fn))

    def _all_mean(self, value):
        return np.asarray(multihost_utils.process_allgather(np.asarray(value))).mean(axis=0)

    def evaluate(self):
        x, y = self.eval_data
        return float(self._all_mean(loss_fn(self.w, x, y)))

    def _save_checkpoint(self, step):
        path = os.path.join(self.args.output_dir, f"checkpoint-{step}")
        if self.args.should_save:
            os.makedirs(path, exist_ok=True)
            np.save(os.path.join(path, "model.npy"), self.w)
            self._rotate_checkpoints()
        return path

    def _rotate_checkpoints(self):
        ckpts = sorted((d for d in os.listdir(self.args.output_dir) if d.startswith("checkpoint-")),
                       key=lambda d: int(d.split("-")[1]))
        keep = {os.path.basename(self.best_model_checkpoint or "")}
        for d in ckpts[:-self.args.save_total_limit]:
            if d not in keep:
                shutil.rmtree(os.path.join(self.args.output_dir, d))

    def _load_best_model(self):
        best_model_path = os.path.join(self.best_model_checkpoint, "model.npy")
        self.w = np.load(best_model_path)

    def train(self):
        xs, ys = self.train_data
        for step in range(1, self.args.max_steps + 1):
            i = (step - 1) % xs.shape[0]
            self.w = self.w - self.args.learning_rate * self._all_mean(self._grad(self.w, xs[i], ys[i]))
            if step % self.args.eval_steps == 0:
                metric = self.evaluate()
                path = self._save_checkpoint(step)
                if self.best_metric is None or metric < self.best_metric:
                    self.best_metric, self.best_model_checkpoint = metric, path
                print(f"step {step}: eval_loss={metric:.5f}")
        if self.args.load_best_model_at_end and self.best_model_checkpoint is not None:
            print(f"Loading best model from {self.best_model_checkpoint} (score: {self.best_metric:.5f}).")
            self._load_best_model()
        return self.evaluate()


def make_data(rank, n_batches=8, batch=16, dim=6):
    rng = np.random.default_rng(21 + rank)
    w_true = np.linspace(-1, 1, dim).astype(np.float32)
    x = rng.normal(size=(n_batches, batch, dim)).astype(np.float32)
    y = x @ w_true + 0.3 * rng.normal(size=(n_batches, batch)).astype(np.float32)
    return x, y


def main():
    node_root = os.path.join(tempfile.gettempdir(), f"{os.environ.get('JOB_ID', 'run')}-node{jax.process_index()}")
    args = TrainingArguments(output_dir=os.path.join(node_root, "outputs"))
    os.makedirs(args.output_dir, exist_ok=True)
    rank = jax.process_index()
    trainer = Trainer(args, make_data(rank), tuple(a[0] for a in make_data(100 + rank, n_batches=1)))
    final_loss = trainer.train()
    print("RESULT best_checkpoint", os.path.basename(trainer.best_model_checkpoint))
    print("RESULT final_eval_loss", round(final_loss, 5))
    print("RESULT weights", [round(float(v), 4) for v in trainer.w])
    multihost_utils.sync_global_devices("end_of_training")
    shutil.rmtree(node_root, ignore_errors=True)


if __name__ == "__main__":
    main()
