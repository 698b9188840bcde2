# SFT validation iterates each rank's packed val loader to exhaustion; ranks pack to different batch counts
# Source: https://github.com/PrimeIntellect-ai/prime-rl/pull/2636
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("dp",))
DATA = NamedSharding(MESH, P("dp"))
REPL = NamedSharding(MESH, P())
SEQ_LEN, MICRO_BATCH, VAL_SAMPLES = 8, 2, 12


def val_samples(rank, world):
    """This rank's share of the validation split: variable-length token sequences."""
    rng = np.random.default_rng(2)
    lengths = rng.integers(3, 14, size=VAL_SAMPLES * world)
    return [rng.normal(size=(int(n),)).astype(np.float32) for n in lengths][rank::world]


class CatDataset:
    """Concatenates samples into one token stream and cuts fixed SEQ_LEN chunks; the trailing partial chunk is dropped."""

    def __init__(self, samples):
        self.samples = samples

    def __iter__(self):
        buf = np.zeros((0,), np.float32)
        for s in self.samples:
            buf = np.concatenate([buf, s])
            while len(buf) >= SEQ_LEN:
                yield buf[:SEQ_LEN]
                buf = buf[SEQ_LEN:]


def micro_batches(dataset):
    rows = []
    for row in dataset:
        rows.append(row)
        if len(rows) == MICRO_BATCH:
            yield np.stack(rows)
            rows = []


@jax.jit
def eval_step(w, x):
    pred = jnp.tanh(x[:, :-1] * w[0] + w[1])
    err = (pred - x[:, 1:]) ** 2
    return jnp.sum(err), jnp.asarray(err.size, jnp.float32), jnp.sum(jnp.isnan(err))


def run_eval_loop(w):
    it = micro_batches(CatDataset(val_samples(jax.process_index(), jax.process_count())))
    total_loss, total_tokens, nan_batches, batches = 0.0, 0.0, 0, 0
    while True:
        batch = next(it, None)
        if batch is None:
            break
        loss_sum, tokens, nans = eval_step(w, jax.make_array_from_process_local_data(DATA, batch))
        total_loss, total_tokens = total_loss + float(loss_sum), total_tokens + float(tokens)
        nan_batches, batches = nan_batches + int(nans > 0), batches + 1
    nan_total = int(multihost_utils.process_allgather(np.int32(nan_batches)).sum())
    return total_loss / max(total_tokens, 1.0), batches, nan_total


def main():
    w = jax.device_put(np.array([0.5, 0.1], np.float32), REPL)
    val_loss, batches, nans = run_eval_loop(w)
    print("RESULT val_loss", round(val_loss, 5))
    print("RESULT val_batches", batches)
    print("RESULT nan_batches", nans)


if __name__ == "__main__":
    main()
