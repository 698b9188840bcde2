# OpenNMT-tf style data-parallel trainer ported to JAX: a finite ("single_pass") training set is
# batched, every replica (process) takes the next batch in turn, and each step builds the global
# batch from the per-replica batches, accumulates gradients and reports the reduced loss.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("replica",))
BATCH = NamedSharding(MESH, P("replica"))
VOCAB, DIM = 16, 8


def make_examples(num_examples=36, length=5):
    rng = np.random.default_rng(545)
    source = rng.integers(1, VOCAB, size=(num_examples, length)).astype(np.int32)
    target = (source[:, ::-1] + 1) % VOCAB
    return source, target


def distribute_datasets_from_function(source, target, batch_size, replica_id, num_replicas):
    """Deals the batches to the replicas in turn, as tf.distribute does."""
    starts = list(range(0, len(source) - batch_size + 1, batch_size))
    for group in range(0, len(starts), num_replicas):
        idx = group + replica_id
        if idx < len(starts):
            s = starts[idx]
            yield source[s:s + batch_size], target[s:s + batch_size]
        else:
            yield source[:0], target[:0]


class Trainer:
    def __init__(self, learning_rate=0.5):
        self.num_replicas = jax.process_count()
        rng = np.random.default_rng(0)
        self.params = {"embedding": rng.normal(0, 0.1, (VOCAB, DIM)).astype(np.float32),
                       "proj": rng.normal(0, 0.1, (DIM, VOCAB)).astype(np.float32)}
        self.learning_rate = learning_rate
        self.iterations = 0

    @staticmethod
    @jax.jit
    def _accumulate_gradients(params, source, target):
        def compute_loss(params):
            logits = params["embedding"][source] @ params["proj"]
            logp = jax.nn.log_softmax(logits)
            return -jnp.mean(jnp.take_along_axis(logp, target[..., None], -1))
        loss, grads = jax.value_and_grad(compute_loss)(params)
        return loss, grads, jnp.sum(source > 0)

    def _forward(self, per_replica_source, per_replica_target):
        source = jax.make_array_from_process_local_data(BATCH, per_replica_source)
        target = jax.make_array_from_process_local_data(BATCH, per_replica_target)
        return self._accumulate_gradients(self.params, source, target)

    def __call__(self, dataset, report_steps=2):
        accum_words = 0
        loss = float("nan")
        for i, (per_replica_source, per_replica_target) in enumerate(dataset):
            loss, grads, num_words = self._forward(per_replica_source, per_replica_target)
            loss = float(loss)
            if np.isnan(loss):
                raise RuntimeError(f"Loss is NaN at step {i + 1}.")
            self.params = jax.tree_util.tree_map(
                lambda p, g: np.asarray(p - self.learning_rate * g), self.params, grads)
            self.iterations += 1
            accum_words += int(num_words)
            if self.iterations % report_steps == 0:
                print(f"Step = {self.iterations} ; Loss = {loss:.4f} ; words = {accum_words}")
        return loss


def main():
    replica_id = jax.process_index()
    source, target = make_examples()
    trainer = Trainer()
    dataset = distribute_datasets_from_function(source, target, batch_size=4,
                                                replica_id=replica_id,
                                                num_replicas=trainer.num_replicas)
    loss = trainer(dataset)
    checksum = float(np.abs(trainer.params["proj"]).sum())
    print("RESULT steps", trainer.iterations)
    print("RESULT final_loss", round(loss, 4))
    print("RESULT proj_checksum", round(checksum, 4))


if __name__ == "__main__":
    main()
