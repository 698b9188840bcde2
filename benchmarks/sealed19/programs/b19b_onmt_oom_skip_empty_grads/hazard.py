# NMT data-parallel trainer: a batch that runs out of device memory is dropped, gradients all-reduced per step
# Source: https://github.com/OpenNMT/OpenNMT-py/issues/2549
# Written for the mcjax sealed19 evaluation (not copied); run as 2 processes by benchmarks/sealed19/run_pair.py.
import logging
import os
import traceback

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))
logger = logging.getLogger("onmt")

HIDDEN = 8
DEVICE_MEMORY_BYTES = 6 * 1024


def all_reduce_and_rescale_tensors(tensors, rescale_denom):
    """Flatten the gradient tensors into one buffer, all-reduce it, and rescale."""
    buffer_t = np.zeros(sum(t.size for t in tensors), dtype=tensors[0].dtype)
    offset = 0
    for t in tensors:
        buffer_t[offset:offset + t.size] = t.reshape(-1)
        offset += t.size
    reduced = np.asarray(multihost_utils.process_allgather(buffer_t)).sum(axis=0) / rescale_denom
    out, offset = [], 0
    for t in tensors:
        out.append(reduced[offset:offset + t.size].reshape(t.shape))
        offset += t.size
    return out


def forward_memory_check(src):
    needed = src.shape[0] * src.shape[1] * src.shape[1] * HIDDEN * 4
    if needed > DEVICE_MEMORY_BYTES:
        raise RuntimeError(f"CUDA out of memory. Tried to allocate {needed} bytes")


def nmt_loss(params, src, tgt):
    h = jnp.tanh(src @ params["enc"])
    return jnp.mean((h.mean(axis=1) @ params["dec"] - tgt) ** 2)


grad_fn = jax.jit(jax.value_and_grad(nmt_loss))


def make_batches(rank, steps=4):
    rng = np.random.default_rng(300 + rank)
    batches = []
    for step in range(steps):
        seq_len = 12 if (rank == 1 and step == 2) else 4
        src = rng.normal(size=(3, seq_len, HIDDEN)).astype(np.float32)
        batches.append((src, rng.normal(size=(3, 2)).astype(np.float32)))
    return batches


class Trainer:
    def __init__(self, params, n_gpu, lr=0.05):
        self.params, self.n_gpu, self.lr = params, n_gpu, lr

    def _gradient_accumulation(self, batch, step):
        src, tgt = batch
        grads = {}
        try:
            forward_memory_check(src)
            loss, grads = grad_fn(self.params, src, tgt)
        except Exception:
            trace_content = traceback.format_exc()
            if "CUDA out of memory" in trace_content:
                logger.warning("Step %d, cuda OOM - batch removed", step)
            else:
                raise
        if self.n_gpu > 1:
            names = [k for k in sorted(self.params) if k in grads]
            reduced = all_reduce_and_rescale_tensors([np.asarray(grads[k]) for k in names], float(self.n_gpu))
            grads = dict(zip(names, reduced))
        for k, g in grads.items():
            self.params[k] = self.params[k] - self.lr * g

    def train(self, batches):
        for step, batch in enumerate(batches):
            self._gradient_accumulation(batch, step)
        return self.params


def main():
    rank, world = jax.process_index(), jax.process_count()
    key = jax.random.PRNGKey(0)
    params = {"enc": np.asarray(jax.random.normal(key, (HIDDEN, HIDDEN)) * 0.2), "dec": np.zeros((HIDDEN, 2), np.float32)}
    trainer = Trainer(params, n_gpu=world)
    params = trainer.train(make_batches(rank))
    print("RESULT steps", 4)
    print("RESULT dec_checksum", round(float(np.abs(params["dec"]).sum()), 5))
    print("RESULT enc_checksum", round(float(np.abs(params["enc"]).sum()), 5))


if __name__ == "__main__":
    main()
