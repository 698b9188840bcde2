import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

EMBED = 6


def all_reduce_dict(data):
    keys = list(data.keys())
    buf = np.array([data[k] for k in keys], dtype=np.float32)
    buf = np.asarray(multihost_utils.process_allgather(buf)).sum(0)
    return dict(zip(keys, buf.tolist()))


def sharded_iterator(batches, num_shards, shard_id, fill_value=None):
    n = (len(batches) + num_shards - 1) // num_shards
    shard = batches[shard_id::num_shards]
    return shard + [fill_value] * (n - len(shard))


def load_subset(split, num_batches, seed):
    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(num_batches):
        src = rng.normal(size=(4, 5, EMBED)).astype(np.float32)
        sample = {"net_input": {"src_tokens": src}, "target": src.mean(1).sum(-1), "ntokens": 20}
        if split == "valid":
            sample["alignments"] = src.mean(1)
        batches.append(sample)
    return batches


class AlignmentCriterion:
    def __call__(self, params, sample):
        pooled = sample["net_input"]["src_tokens"].mean(1)
        pred = pooled @ params["w"]
        loss = float(jnp.sum((pred - sample["target"]) ** 2))
        logging_output = {"loss": loss, "ntokens": sample["ntokens"],
                          "nsentences": len(sample["target"]), "sample_size": len(sample["target"])}
        if "alignments" in sample and sample["alignments"] is not None:
            proj = pooled * params["w"]
            logging_output["alignment_loss"] = float(jnp.sum((proj - sample["alignments"]) ** 2))
        return loss, len(sample["target"]), logging_output


class Trainer:
    def __init__(self, criterion, lr=0.05):
        self.criterion = criterion
        self.params = {"w": jnp.zeros(EMBED)}
        self.lr = lr
        self._dummy_batch = "DUMMY"
        self._grad = jax.jit(jax.grad(
            lambda p, x, y: jnp.sum((x.mean(1) @ p["w"] - y) ** 2)))

    def _prepare_sample(self, sample):
        if sample is None or sample == "DUMMY" or len(sample) == 0:
            return None
        return sample

    def _aggregate_logging_outputs(self, logging_outputs, ignore=False):
        data = {}
        for k in logging_outputs[0].keys():
            data["logging_outputs_" + k] = 0.0 if ignore else sum(log[k] for log in logging_outputs)
        return all_reduce_dict(data)

    def begin_epoch(self, epoch):
        print(f"| begin training epoch {epoch}")

    def train_step(self, sample):
        if self._dummy_batch == "DUMMY":
            self._dummy_batch = sample
        sample = self._prepare_sample(sample)
        is_dummy = sample is None
        if is_dummy:
            sample = self._dummy_batch
        grads = self._grad(self.params, sample["net_input"]["src_tokens"], sample["target"])
        if is_dummy:
            grads = jax.tree_util.tree_map(jnp.zeros_like, grads)
        grads = jax.tree_util.tree_map(
            lambda g: np.asarray(multihost_utils.process_allgather(np.asarray(g))).mean(0), grads)
        self.params = jax.tree_util.tree_map(lambda p, g: p - self.lr * g, self.params, grads)

    def valid_step(self, sample):
        if self._dummy_batch == "DUMMY":
            self._dummy_batch = sample
        sample = self._prepare_sample(sample)
        is_dummy_batch = sample is None
        if is_dummy_batch:
            sample = self._prepare_sample(self._dummy_batch)
        _loss, sample_size, logging_output = self.criterion(self.params, sample)
        return self._aggregate_logging_outputs([logging_output], ignore=is_dummy_batch)


def validate(trainer, valid_batches, rank, world_size, epoch):
    stats = {}
    for sample in sharded_iterator(valid_batches, world_size, rank, fill_value=[]):
        out = trainer.valid_step(sample)
        for k, v in out.items():
            stats[k] = stats.get(k, 0.0) + v
    return stats["logging_outputs_loss"] / stats["logging_outputs_sample_size"]


def main():
    rank, world_size = jax.process_index(), jax.process_count()
    train_batches = load_subset("train", 4, seed=1)
    valid_batches = load_subset("valid", 3, seed=2)
    trainer = Trainer(AlignmentCriterion())
    valid_losses = []
    for epoch in range(1, 4):
        trainer.begin_epoch(epoch)
        for sample in sharded_iterator(train_batches, world_size, rank, fill_value=[]):
            trainer.train_step(sample)
        valid_losses.append(validate(trainer, valid_batches, rank, world_size, epoch))
        print(f"| epoch {epoch:03d} | valid on 'valid' subset | loss {valid_losses[-1]:.4f}")
    print("RESULT valid_losses", [round(v, 4) for v in valid_losses])
    print("RESULT weights", np.round(np.asarray(trainer.params["w"]), 4).tolist())


if __name__ == "__main__":
    main()
