import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, HIDDEN, NUM_ACTIONS = 24, 8, 6


class TrainingInputBatch(dict):
    def __len__(self):
        return len(self["sequences"])

    def slice(self, idx):
        return TrainingInputBatch({k: v[idx] for k, v in self.items()})


def make_rollout_batch(dp_rank, num_samples=8):
    """Rollouts of one data-parallel worker; response lengths come from the generator."""
    rng = np.random.default_rng(7 + dp_rank)
    lengths = rng.integers(1, NUM_ACTIONS + 1, size=num_samples)
    mask = (np.arange(NUM_ACTIONS)[None, :] < lengths[:, None]).astype(np.float32)
    return TrainingInputBatch({
        "sequences": rng.integers(1, VOCAB, size=(num_samples, NUM_ACTIONS)).astype(np.int32),
        "response_mask": mask,
        "loss_mask": mask.copy(),
        "advantages": rng.normal(size=(num_samples, 1)).astype(np.float32) * mask,
        "rollout_logprobs": (rng.normal(size=(num_samples, NUM_ACTIONS)) * 0.1 - 3.0).astype(np.float32),
    })


class TokenBasedBatchIterator:
    """Packs samples into micro batches under a token budget; every DP rank runs the same number of them."""

    def __init__(self, data, max_token_len):
        self.data = data
        self.micro_batches, current, tokens = [], [], 0
        for i, n in enumerate(data["response_mask"].sum(1).astype(int)):
            if current and tokens + n > max_token_len:
                self.micro_batches.append(current)
                current, tokens = [], 0
            current.append(i)
            tokens += n
        self.micro_batches.append(current)
        counts = np.asarray(multihost_utils.process_allgather(np.int32(len(self.micro_batches))))
        self.num_padding_microbatches = int(counts.max()) - len(self.micro_batches)

    def _create_padding_batch(self):
        batch_size, num_actions = 1, self.data["response_mask"].shape[1]
        data = TrainingInputBatch({
            "sequences": np.zeros((batch_size, num_actions), dtype=np.int32),
            "advantages": np.zeros((batch_size, 1), dtype=np.float32),
            "loss_mask": np.zeros((batch_size, num_actions), dtype=np.float32),
            "response_mask": np.ones((batch_size, num_actions), dtype=np.float32),
        })
        if self.data.get("rollout_logprobs") is not None:
            ref_tensor = self.data["rollout_logprobs"]
            data["rollout_logprobs"] = np.zeros((batch_size, num_actions), dtype=ref_tensor.dtype)
        return data

    def __iter__(self):
        for idx in self.micro_batches:
            yield self.data.slice(np.array(idx))
        for _ in range(self.num_padding_microbatches):
            yield self._create_padding_batch()


def policy_loss(params, batch):
    h = jnp.tanh(params["embed"][batch["sequences"]])
    logp_all = jax.nn.log_softmax(h @ params["head"], -1)
    logprobs = jnp.take_along_axis(logp_all, batch["sequences"][..., None], -1)[..., 0]
    tis = jnp.minimum(jnp.exp(jax.lax.stop_gradient(logprobs) - batch["rollout_logprobs"]), 2.0)
    pg = -(tis * logprobs * batch["advantages"] * batch["loss_mask"]).sum()
    return pg / jnp.maximum(batch["loss_mask"].sum(), 1.0)


class PolicyWorker:
    def __init__(self, lr=0.1):
        rng = np.random.default_rng(0)
        self.params = {"embed": jnp.asarray(rng.normal(size=(VOCAB, HIDDEN)), jnp.float32),
                       "head": jnp.asarray(rng.normal(size=(HIDDEN, VOCAB)) * 0.1, jnp.float32)}
        self.lr = lr
        self._grad = jax.jit(jax.value_and_grad(policy_loss))

    def _all_reduce(self, grads):
        return jax.tree_util.tree_map(
            lambda g: jnp.asarray(np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0)), grads)

    def train_step(self, data, max_token_len=8):
        losses = []
        for micro_batch in TokenBasedBatchIterator(data, max_token_len):
            loss, grads = self._grad(self.params, dict(micro_batch))
            grads = self._all_reduce(grads)
            self.params = jax.tree_util.tree_map(lambda p, g: p - self.lr * g, self.params, grads)
            losses.append(float(loss))
        return losses


def main():
    rank = jax.process_index()
    worker = PolicyWorker()
    losses = worker.train_step(make_rollout_batch(rank))
    n_steps = np.asarray(multihost_utils.process_allgather(np.int32(len(losses))))
    print("RESULT micro_batches_per_rank", n_steps.tolist())
    print("RESULT head_checksum", round(float(worker.params["head"].sum()), 4))
    print("RESULT embed_checksum", round(float(worker.params["embed"].sum()), 4))


if __name__ == "__main__":
    main()
