# A data-parallel LM trainer evaluates each process's shard locally and agrees over processes on a failure before the eval all-reduce
# Source: https://github.com/unslothai/unsloth-zoo/pull/841
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM, SEQ, BATCH, LR, STEPS, EVAL_EVERY = 16, 8, 6, 2, 0.5, 4, 2
MESH = jax.make_mesh((jax.device_count(),), ("data",))


class MalformedEvalBatch(ValueError):
    pass


def shard(a, spec=P("data")):
    return jax.make_array_from_process_local_data(NamedSharding(MESH, spec), np.asarray(a))


@jax.jit
def all_sum(x):
    return jnp.sum(x, axis=0)


def seq_nll(emb, seq):
    h = jax.nn.one_hot(seq[:-1], VOCAB) @ emb
    logp = jax.nn.log_softmax(h @ emb.T)
    return -jnp.sum(jnp.take_along_axis(logp, seq[1:, None], axis=1))


@jax.jit
def train_step(emb, tokens):
    loss_fn = lambda e: jnp.mean(jax.vmap(lambda s: seq_nll(e, s))(tokens)) / (SEQ - 1)
    return emb - LR * jax.grad(loss_fn)(emb)  # gradient averaged over every process's batch


class Trainer:
    def __init__(self):
        self.emb = shard(np.random.default_rng(0).normal(0, 0.3, (VOCAB, DIM)).astype(np.float32), P())
        self.eval_log = []

    def train_batch(self, step):
        rng = np.random.default_rng([step, jax.process_index()])
        start = rng.integers(0, VOCAB, (BATCH, 1))
        return ((start + np.arange(SEQ)) % VOCAB).astype(np.int32)  # counting sequences

    def eval_batches(self, step):
        """The eval stream is re-read at each evaluation; by step 4 process 1's file has a truncated record."""
        lengths = [SEQ, SEQ - 1, 0] if jax.process_index() == 1 and step >= 4 else [SEQ, SEQ - 2, SEQ]
        return [((3 * i + np.arange(n)) % VOCAB).astype(np.int32) for i, n in enumerate(lengths)]

    def _evaluate_batch_totals(self, batches):
        local_emb = jnp.asarray(self.emb.addressable_data(0))
        loss, ntok = 0.0, 0
        for seq in batches:
            if len(seq) < 2:
                raise MalformedEvalBatch(f"eval record with {len(seq)} tokens")
            loss, ntok = loss + float(seq_nll(local_emb, jnp.asarray(seq))), ntok + len(seq) - 1
        return np.float32(loss), np.float32(ntok)

    def evaluate(self, step):
        failed, loss, ntok = 0.0, np.float32(0.0), np.float32(0.0)
        try:
            loss, ntok = self._evaluate_batch_totals(self.eval_batches(step))
        except MalformedEvalBatch as err:
            print(f"step {step}: evaluation failed on process {jax.process_index()}: {err}")
            failed = 1.0
        if float(all_sum(shard(np.array([failed], np.float32)))) > 0:  # failure-status consensus
            self.eval_log.append((step, "skipped"))
            return
        total_loss = float(all_sum(shard(np.array([loss]))))
        total_tok = float(all_sum(shard(np.array([ntok]))))
        self.eval_log.append((step, round(total_loss / total_tok, 4)))

    def fit(self):
        for step in range(1, STEPS + 1):
            self.emb = train_step(self.emb, shard(self.train_batch(step)))
            if step % EVAL_EVERY == 0:
                self.evaluate(step)


trainer = Trainer()
trainer.fit()
print("RESULT eval_log", trainer.eval_log)
print("RESULT emb_checksum", round(float(np.abs(np.asarray(trainer.emb.addressable_data(0))).sum()), 4))
