# Port of a Hugging Face Trainer bug to multi-controller JAX: the checkpoint save is entered only by
# the process that should write (process 0), but it first calls store_flos(), which all-gathers the
# per-process FLOP counters across every process: process 0 runs that collective alone.
# Source: https://github.com/huggingface/transformers/pull/27929
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import json
import os
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class TrainingArguments:

  def __init__(self, output_dir, save_steps=2, max_steps=6, per_device_batch=8, lr=0.1):
    self.output_dir = output_dir
    self.save_steps = save_steps
    self.max_steps = max_steps
    self.per_device_batch = per_device_batch
    self.lr = lr

  @property
  def should_save(self):
    # Only the main process writes checkpoints.
    return jax.process_index() == 0


class TrainerState:

  def __init__(self):
    self.global_step = 0
    self.total_flos = 0.0

  def save_to_json(self, path):
    with open(path, "w") as f:
      json.dump({"global_step": self.global_step, "total_flos": self.total_flos}, f)


class Trainer:

  def __init__(self, args):
    self.args = args
    self.state = TrainerState()
    self.current_flos = 0.0
    self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    self.params = jnp.zeros((4,), jnp.float32)
    self._train_step = jax.jit(self._step)

  def _step(self, params, x, y):
    def loss_fn(p):
      return jnp.mean((x @ p - y) ** 2)
    loss, grads = jax.value_and_grad(loss_fn)(params)
    return params - self.args.lr * grads, loss

  def _get_batch(self, step):
    rng = np.random.default_rng(1000 * step + jax.process_index())
    x = rng.normal(size=(self.args.per_device_batch, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], np.float32)).astype(np.float32)
    sharding = NamedSharding(self.mesh, P("data"))
    return (jax.make_array_from_process_local_data(sharding, x),
            jax.make_array_from_process_local_data(sharding, y))

  def floating_point_ops(self, x):
    return 6.0 * x.shape[0] * self.params.size

  def training_step(self, step):
    x, y = self._get_batch(step)
    self.params, loss = self._train_step(self.params, x, y)
    self.current_flos += self.floating_point_ops(x) / jax.process_count()
    return loss

  def store_flos(self):
    # Gather the FLOPs of every process before they are written into the trainer state.
    gathered = multihost_utils.process_allgather(np.asarray(self.current_flos, np.float64))
    self.state.total_flos += float(np.sum(gathered))
    self.current_flos = 0.0

  def _save_checkpoint(self):
    self.store_flos()
    ckpt_dir = os.path.join(self.args.output_dir, f"checkpoint-{self.state.global_step}")
    os.makedirs(ckpt_dir, exist_ok=True)
    np.save(os.path.join(ckpt_dir, "params.npy"), np.asarray(self.params))
    self.state.save_to_json(os.path.join(ckpt_dir, "trainer_state.json"))

  def _maybe_log_save_evaluate(self):
    if self.state.global_step % self.args.save_steps == 0 and self.args.should_save:
      self._save_checkpoint()

  def train(self):
    loss = None
    for step in range(1, self.args.max_steps + 1):
      loss = self.training_step(step)
      self.state.global_step = step
      self._maybe_log_save_evaluate()
    self.store_flos()
    return float(loss)


def main():
  out = tempfile.mkdtemp(prefix=f"b7a_flos_{os.environ.get('JOB_ID', 'job')}_{jax.process_index()}_")
  trainer = Trainer(TrainingArguments(out))
  loss = trainer.train()
  print(f"RESULT loss {loss:.6f}")
  print(f"RESULT total_flos {trainer.state.total_flos:.1f}")
  print(f"RESULT params {np.round(np.asarray(trainer.params), 5).tolist()}")


if __name__ == "__main__":
  main()
