# Port of a Zero-to-Wan training-script bug to multi-controller JAX: the checkpoint is saved only
# under `master_process`, but save_checkpoint first gathers the FSDP-sharded weights and optimizer
# state into full arrays, a collective over every process: process 0 gathers alone.
# Source: https://github.com/Bria-AI/Zero-to-Wan/pull/1
# Written for the mcjax sealed7 evaluation (not copied); run as 2 processes by benchmarks/sealed7/run_pair.py.
import json
import os
import tempfile
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class Args:
  output_dir: str
  max_steps: int = 6
  checkpoint_every: int = 3
  lr: float = 0.05


def full_state_dict(tree):
  """Like FSDP FULL_STATE_DICT: all-gathers every sharded leaf into a full host array."""
  return jax.tree.map(lambda a: np.asarray(multihost_utils.process_allgather(a, tiled=True)), tree)


def save_checkpoint(params, opt_state, global_step, args, rank):
  cpu_state = full_state_dict(params)
  optim_state = full_state_dict(opt_state)
  save_dir = os.path.join(args.output_dir, f"checkpoint-{global_step}")
  os.makedirs(save_dir, exist_ok=True)
  if rank <= 0:
    np.savez(os.path.join(save_dir, "model.npz"), **cpu_state)
    np.savez(os.path.join(save_dir, "optimizer.npz"), **optim_state)
    with open(os.path.join(save_dir, "config.json"), "w") as f:
      json.dump({"step": global_step, "keys": sorted(cpu_state)}, f)


class FSDPModel:

  def __init__(self, mesh):
    self.sharding = NamedSharding(mesh, P("fsdp"))
    rng = np.random.default_rng(3)
    self.params = {k: jax.device_put(rng.normal(size=(8,)).astype(np.float32), self.sharding)
                   for k in ("w_in", "w_out")}
    self.opt_state = {k: jax.device_put(np.zeros((8,), np.float32), self.sharding)
                      for k in self.params}
    self.train_step = jax.jit(self._train_step)

  @staticmethod
  def _train_step(params, mom, x, lr):
    def loss_fn(p):
      return jnp.mean((p["w_in"] * x - p["w_out"]) ** 2)
    loss, g = jax.value_and_grad(loss_fn)(params)
    mom = jax.tree.map(lambda m, gi: 0.9 * m + gi, mom, g)
    params = jax.tree.map(lambda p, m: p - lr * m, params, mom)
    return params, mom, loss


def main():
  args = Args(output_dir=tempfile.mkdtemp(prefix=f"b7a_wan_{jax.process_index()}_"))
  ddp_rank = jax.process_index()
  master_process = ddp_rank == 0
  mesh = jax.sharding.Mesh(np.array(jax.devices()), ("fsdp",))
  model = FSDPModel(mesh)
  global_step = 0
  loss = None
  while global_step < args.max_steps:
    local_x = np.full((8 // jax.process_count(),), 1.0 + 0.1 * global_step, np.float32)
    x = jax.make_array_from_process_local_data(model.sharding, local_x)
    model.params, model.opt_state, loss = model.train_step(model.params, model.opt_state, x, args.lr)
    if global_step % args.checkpoint_every == 0 and global_step > 0 and master_process:
      save_checkpoint(model.params, model.opt_state, global_step, args, rank=ddp_rank)
    global_step += 1
  final = full_state_dict(model.params)
  print(f"RESULT loss {float(loss):.6f}")
  print(f"RESULT w_in {np.round(final['w_in'], 5).tolist()}")


if __name__ == "__main__":
  main()
