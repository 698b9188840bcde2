# The logger is enabled only on process 0 (enable=jax.process_index() == 0), and its save_checkpoint
# runs a checkpointer whose save has global barriers: process 0 waits in them alone.
# Source: https://github.com/young-geng/EasyLM/commit/54e9165b49448b6b969e5bea3fcfa733101597df
#   ("use cloudpickle for checkpoint to avoid jax barrier timeout")
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


class Checkpointer:
  """Like orbax.Checkpointer: every process joins the barriers around the write."""

  def save(self, directory, item, force=False):
    multihost_utils.sync_global_devices("Checkpointer:save:start")
    tmp = directory + ".orbax-checkpoint-tmp"
    if jax.process_index() == 0:
      os.makedirs(tmp, exist_ok=True)
      with open(os.path.join(tmp, "checkpoint"), "wb") as f:
        pickle.dump(item, f)
      os.replace(tmp, directory) if not os.path.exists(directory) or force else None
    multihost_utils.sync_global_devices("Checkpointer:save:finalize")


def save_checkpoint(ckpt_dir, target, step, overwrite=False):
  ckpt_path = os.path.join(ckpt_dir, f"checkpoint_{step}")
  Checkpointer().save(ckpt_path, target, force=overwrite)
  return ckpt_path


@dataclasses.dataclass
class LoggerConfig:
  output_dir: str


class WandBLogger:
  def __init__(self, config, variant, enable=True):
    self.config, self.variant, self.enable = config, variant, enable
    if self.enable:
      os.makedirs(self.config.output_dir, exist_ok=True)

  def log(self, *args, **kwargs):
    if self.enable:
      print("log", *args, kwargs)

  def save_pickle(self, obj, filename):
    if self.enable:
      with open(os.path.join(self.config.output_dir, filename), "wb") as fout:
        pickle.dump(obj, fout)

  def save_checkpoint(self, *args, **kwargs):
    if self.enable:
      ckpt_dir = os.path.join(self.config.output_dir, "checkpoint")
      save_checkpoint(ckpt_dir, *args, **kwargs)


def to_host(tree):
  return jax.tree.map(lambda x: np.asarray(x.addressable_data(0)) if isinstance(x, jax.Array) else x, tree)


def main():
  mesh = jax.make_mesh((jax.device_count(),), ("dp",))
  data_sharding, repl = NamedSharding(mesh, P("dp")), NamedSharding(mesh, P())
  out_dir = os.path.join(tempfile.gettempdir(), f"b6a_easylm_{os.environ.get('JOB_ID', 'local')}")
  logger = WandBLogger(config=LoggerConfig(out_dir), variant={"lr": 0.1},
                       enable=jax.process_index() == 0)
  params = jax.device_put(jnp.zeros((4,), jnp.float32), repl)

  @jax.jit
  def train_step(params, batch):
    grad = jnp.mean(batch, axis=0) - params
    return params + 0.1 * grad, jnp.mean((batch - params) ** 2)

  def save_checkpoint_fn(step, params):
    metadata = dict(step=step, variant=logger.variant)
    logger.save_checkpoint(to_host({"params": params, "step": step}), step=step, overwrite=True)
    logger.save_pickle(metadata, "metadata.pkl")

  rng = np.random.default_rng(1234 + jax.process_index())
  for step in range(1, 7):
    local = rng.normal(size=(2, 4)).astype(np.float32) + step
    batch = jax.make_array_from_process_local_data(data_sharding, local)
    params, loss = train_step(params, batch)
    if step % 3 == 0:
      save_checkpoint_fn(step, params)
      logger.log({"step": step, "loss": float(loss)})
  print(f"RESULT final_params={np.round(to_host(params), 4).tolist()}")
  print(f"RESULT final_loss={float(loss):.4f}")


if __name__ == "__main__":
  main()
