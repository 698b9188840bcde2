# Port of a PaddlePaddle ParallelExecutor report to multi-controller JAX (correct look-alike): the batch reader drops the incomplete last batch, so every fed batch splits evenly over the places.
# Source: https://github.com/PaddlePaddle/Paddle/issues/11368
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import argparse
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("places",))


def parse_args():
  p = argparse.ArgumentParser()
  p.add_argument("--batch_size", type=int, default=8)
  p.add_argument("--num_samples", type=int, default=25)
  p.add_argument("--pass_num", type=int, default=2)
  return p.parse_args([])


def flowers_reader(num_samples):
  def reader():
    for i in range(num_samples):
      img = np.cos(np.arange(6, dtype=np.float32) * (i + 1) / 5.0)
      yield img, np.int32(i % 2)
  return reader


def batch(reader, batch_size, drop_last=False):
  def batched():
    buf = []
    for sample in reader():
      buf.append(sample)
      if len(buf) == batch_size:
        yield buf
        buf = []
    if buf and not drop_last:
      yield buf
  return batched


def feed_and_split(samples):
  """Split the fed batch over the places (one per process here) like the executor's feeder."""
  mine = samples[jax.process_index()::jax.process_count()]
  x = np.stack([s[0] for s in mine]) if mine else np.zeros((0, 6), np.float32)
  y = np.array([s[1] for s in mine], np.int32)
  return (multihost_utils.host_local_array_to_global_array(x, MESH, P("places")),
          multihost_utils.host_local_array_to_global_array(y, MESH, P("places")))


@jax.jit
def train_step(w, x, y):
  def loss_fn(w):
    logit = x @ w
    return jnp.mean(jnp.logaddexp(0.0, logit) - y * logit)
  loss, g = jax.value_and_grad(loss_fn)(w)
  return w - 0.3 * g, loss


def main():
  args = parse_args()
  train_reader = batch(flowers_reader(args.num_samples), args.batch_size, drop_last=True)
  w = jax.device_put(jnp.zeros((6,), jnp.float32), NamedSharding(MESH, P()))
  for pass_id in range(args.pass_num):
    for data in train_reader():
      x, y = feed_and_split(data)
      w, loss = train_step(w, x, y)
    print(f"pass {pass_id} loss {float(loss):.4f}")
  print(f"RESULT final_loss {float(loss):.5f}")
  print(f"RESULT w_sum {float(jnp.sum(w)):.5f}")


if __name__ == "__main__":
  main()
