# The wait for a new checkpoint polls on process 0 only; the wait duration is recorded before the
# broadcast of the result, so each process records its own (different) wait time.
# Source: https://github.com/google/orbax/commit/e5dc1ad6288155c5c9ed9304e471133d97f9fed2
#   ("Record wait duration after result broadcast, so that all processes record the same duration.")
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import collections
import contextlib
import os
import tempfile
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

SECONDS_TO_SLEEP = 0.4
_durations = collections.defaultdict(list)


def _record(event, duration, **kwargs):
  _durations[event].append(duration)


jax.monitoring.register_event_duration_secs_listener(_record)


def checkpoint_steps(checkpoint_dir):
  return sorted(int(p.name) for p in checkpoint_dir.iterdir() if p.name.isdigit() and (p / "DONE").exists())


def _wait_for_new_checkpoint(checkpoint_dir, until_step=None, seconds_to_sleep=1, timeout=None):
  start = time.time()
  stop_time = start + timeout if timeout is not None else None

  def _sleep_and_maybe_exit():
    if stop_time is not None and time.time() + seconds_to_sleep > stop_time:
      return True
    time.sleep(seconds_to_sleep)
    return False

  result = -1
  if jax.process_index() == 0:
    while True:
      steps = checkpoint_steps(checkpoint_dir) if checkpoint_dir.exists() else []
      checkpoint_step = max(steps) if steps else None
      if checkpoint_step is not None and (until_step is None or checkpoint_step >= until_step):
        result = checkpoint_step
        break
      if _sleep_and_maybe_exit():
        break

  wait_duration = time.time() - start
  jax.monitoring.record_event_duration_secs("/jax/orbax/checkpoint_utils/wait_duration", wait_duration)
  result = multihost_utils.broadcast_one_to_all(np.int32(result)).item()
  return result


@contextlib.contextmanager
def wait_for_new_checkpoint(checkpoint_dir, until_step=None, seconds_to_sleep=1, timeout=None):
  step = _wait_for_new_checkpoint(checkpoint_dir, until_step, seconds_to_sleep, timeout)
  yield step


def fake_trainer(checkpoint_dir, steps, period):
  """Stands in for the training job that writes checkpoints into the shared directory."""
  for step in steps:
    time.sleep(period)
    d = checkpoint_dir / str(step)
    d.mkdir(parents=True, exist_ok=True)
    np.save(d / "w.npy", np.full((2,), float(step), dtype=np.float32))
    (d / "DONE").write_text("")


def evaluate(checkpoint_dir, step, mesh):
  w = np.load(checkpoint_dir / str(step) / "w.npy")
  arr = jax.make_array_from_process_local_data(NamedSharding(mesh, P("data")), w[jax.process_index():][:1])
  return float(jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(arr))


def main():
  mesh = jax.make_mesh((jax.device_count(),), ("data",))
  ckpt_dir = Path(tempfile.gettempdir()) / f"b6a_waitckpt_{os.environ.get('JOB_ID', 'local')}"
  multihost_utils.sync_global_devices("eval_start")
  if jax.process_index() == 0:
    threading.Thread(target=fake_trainer, args=(ckpt_dir, [100, 200], 1.0), daemon=True).start()
  last_step, evals = 0, []
  while last_step < 200:
    with wait_for_new_checkpoint(ckpt_dir, until_step=last_step + 1, seconds_to_sleep=SECONDS_TO_SLEEP,
                                 timeout=30) as step:
      evals.append((step, evaluate(ckpt_dir, step, mesh)))
      last_step = step
  waits = _durations["/jax/orbax/checkpoint_utils/wait_duration"]
  print(f"RESULT evals={evals}")
  print(f"RESULT recorded_wait_intervals={[round(d / SECONDS_TO_SLEEP) for d in waits]}")


if __name__ == "__main__":
  main()
