# Port of a Horovod report to multi-controller JAX: a fully convolutional net trains on images whose size differs per worker, and a batch-statistics tensor shaped like the feature map is all-reduced.
# Source: https://github.com/horovod/horovod/issues/336
# Written for the mcjax sealed9 evaluation (not copied); run as 2 processes by benchmarks/sealed9/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CHANNELS = 4
IMAGE_SIZES = [(32, 32), (40, 24), (24, 48), (36, 36)]   # the dataset's images vary in shape


def load_batch(step, index):
  """Each worker reads its own image; sizes vary from file to file."""
  h, w = IMAGE_SIZES[(step * jax.process_count() + index) % len(IMAGE_SIZES)]
  rng = np.random.default_rng(100 * step + index)
  img = rng.normal(size=(1, h, w, 1)).astype(np.float32)
  target = (img > 0.5).astype(np.float32)
  return img, target


def init_params():
  k1, k2 = jax.random.split(jax.random.PRNGKey(0))
  return {"conv1": 0.3 * jax.random.normal(k1, (3, 3, 1, CHANNELS)),
          "conv2": 0.3 * jax.random.normal(k2, (1, 1, CHANNELS, 1))}


def conv(x, w):
  return jax.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


@jax.jit
def forward_backward(params, img, target):
  def loss_fn(p):
    feat = jax.nn.relu(conv(img, p["conv1"]))
    logits = conv(feat, p["conv2"])
    loss = jnp.mean(jnp.maximum(logits, 0) - logits * target + jnp.log1p(jnp.exp(-jnp.abs(logits))))
    return loss, feat
  (loss, feat), grads = jax.value_and_grad(loss_fn, has_aux=True)(params)
  return loss, feat, grads


def allreduce_mean(x):
  return np.asarray(multihost_utils.process_allgather(x)).mean(axis=0)


def feature_stats(feat):
  """Batch statistics of the first feature map, for the activation monitor."""
  return np.asarray(feat[0].mean(axis=-1))


def train(steps=4, lr=0.5):
  params = init_params()
  monitor = []
  for step in range(steps):
    img, target = load_batch(step, jax.process_index())
    loss, feat, grads = forward_backward(params, img, target)
    grads = jax.tree_util.tree_map(lambda g: allreduce_mean(np.asarray(g)), grads)
    params = jax.tree_util.tree_map(lambda p, g: p - lr * g, params, grads)
    monitor.append(float(allreduce_mean(feature_stats(feat)).mean()))
  return params, monitor


def main():
  params, monitor = train()
  print(f"RESULT monitor {np.round(monitor, 5).tolist()}")
  print(f"RESULT conv2 {np.round(np.asarray(params['conv2']).ravel(), 5).tolist()}")


if __name__ == "__main__":
  main()
