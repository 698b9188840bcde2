# Port of a KempnerForge fix to multi-controller JAX (correct look-alike): in load() process 0 decides
# whether train_state exists and broadcasts that flag, so every process takes the same branch even
# when their views of the checkpoint directory differ.
# Source: https://github.com/KempnerInstitute/KempnerForge/pull/50
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import os
import pickle
import tempfile
from pathlib import Path

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


def node_local_checkpoint_dir():
  # Each process sees the checkpoint directory through its own node's storage.
  job = os.environ.get("JOB_ID", "job")
  return Path(tempfile.gettempdir()) / f"b8b_kforge_{job}" / f"node{jax.process_index()}" / "ckpt"


class CheckpointManager:

  def __init__(self, directory):
    self.dir = Path(directory)
    self.train_state_path = self.dir / "train_state.pkl"

  def save(self, step, params):
    if jax.process_index() == 0:
      self.dir.mkdir(parents=True, exist_ok=True)
      with open(self.train_state_path, "wb") as f:
        pickle.dump({"step": step, "params": np.asarray(params)}, f)
    multihost_utils.sync_global_devices("kempnerforge_ckpt_save")

  def load(self, params):
    step = 0
    exists = np.int32(self.train_state_path.exists() if jax.process_index() == 0 else 0)
    if int(multihost_utils.broadcast_one_to_all(exists)):
      if jax.process_index() == 0:
        with open(self.train_state_path, "rb") as f:
          state = pickle.load(f)
        payload = np.concatenate([[state["step"]], state["params"]]).astype(np.float32)
      else:
        payload = np.zeros((1 + params.shape[0],), np.float32)
      payload = np.asarray(multihost_utils.broadcast_one_to_all(payload))
      step, params = int(payload[0]), payload[1:]
    return step, params


def train(params, start, stop):
  for step in range(start, stop):
    rng = np.random.default_rng([step, jax.process_index()])
    grad = (params - rng.normal(size=params.shape)).astype(np.float32)
    grad = np.asarray(multihost_utils.process_allgather(grad)).mean(axis=0)
    params = params - 0.1 * grad
  return params


def main():
  ckpt = CheckpointManager(node_local_checkpoint_dir())
  params = train(np.zeros((4,), np.float32), 0, 3)
  ckpt.save(3, params)
  # Resume, as after a restart of the job.
  step, resumed = CheckpointManager(node_local_checkpoint_dir()).load(np.zeros((4,), np.float32))
  params = train(resumed, step, 5)
  print(f"RESULT resumed_step {step}")
  print(f"RESULT params {np.round(params, 5).tolist()}")


if __name__ == "__main__":
  main()
