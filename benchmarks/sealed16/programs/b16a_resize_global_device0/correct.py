# Kauldron-style image pipeline: the Resize transform puts each host's batch on its own first local device
# Source: https://github.com/google-research/kauldron/commit/ef8d63527ce7fad6cb2e684feb8091559b7aee23
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass(frozen=True)
class Resize:
    """Element-wise resize on an accelerator (images arrive at varying sizes)."""
    size: tuple
    method: str = "bilinear"

    def map(self, element):
        *batch, _, _, c = element.shape
        size = (*batch, *self.size, c)
        # Explicitly place the element to avoid a disallowed implicit host-to-device transfer.
        element = jax.device_put(element, jax.local_devices()[0])
        return np.asarray(jax.image.resize(element, size, method=self.method))


@dataclasses.dataclass(frozen=True)
class Normalize:
    mean: float = 0.5
    std: float = 0.25

    def map(self, element):
        return ((element - self.mean) / self.std).astype(np.float32)


class HostImagePipeline:
    """Each host decodes its own share of the global batch and applies the transforms."""

    def __init__(self, transforms, host_batch_size, seed):
        self.transforms, self.host_batch_size = transforms, host_batch_size
        self.rng = np.random.default_rng(seed)

    def __iter__(self):
        while True:
            side = int(self.rng.integers(6, 12))
            images = self.rng.uniform(size=(self.host_batch_size, side, side, 3)).astype(np.float32)
            labels = (images.mean(axis=(1, 2, 3)) > 0.5).astype(np.float32)
            for t in self.transforms:
                images = t.map(images)
            yield images, labels


@jax.jit
def train_step(w, images, labels):
    def loss_fn(w):
        feats = jnp.mean(images, axis=(1, 2))  # global average pooling -> (batch, channels)
        logits = feats @ w
        return jnp.mean(jnp.logaddexp(0.0, logits) - labels * logits)
    loss, grad = jax.value_and_grad(loss_fn)(w)
    return w - 0.5 * grad, loss


def main():
    mesh = Mesh(np.array(jax.devices()), ("data",))
    batch = NamedSharding(mesh, P("data"))
    pipeline = HostImagePipeline([Resize(size=(8, 8)), Normalize()], host_batch_size=2, seed=5 + jax.process_index())
    w = jax.device_put(np.zeros((3,), np.float32), NamedSharding(mesh, P()))
    for step, (images, labels) in zip(range(4), pipeline):
        w, loss = train_step(w, jax.make_array_from_process_local_data(batch, images),
                             jax.make_array_from_process_local_data(batch, labels))
    print("RESULT loss", round(float(loss), 5))
    print("RESULT w", np.round(np.asarray(w), 5).tolist())


if __name__ == "__main__":
    main()
