# Examples whose prompt leaves no room for the target are filtered out of the dataset before it is sharded
# Source: https://github.com/mosaicml/llm-foundry/pull/348
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import dataclasses
import os
import warnings

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB = 32


@dataclasses.dataclass
class FinetuneConfig:
    max_seq_len: int = 8
    device_train_batch_size: int = 4
    device_train_microbatch_size: int = 2
    num_examples: int = 24


def build_from_hf(cfg: FinetuneConfig) -> list[dict]:
    """Tokenized prompt/response pairs; examples whose prompt is too long are dropped here, before sharding."""
    examples = []
    for i in range(cfg.num_examples):
        n_ctx = 2 + (i * 5) % 9
        context = [(i + j) % VOCAB + 1 for j in range(n_ctx)]
        examples.append({"input_ids": context, "labels": [(i * 3) % VOCAB + 1, (i * 7) % VOCAB + 1]})
    filtered = [ex for ex in examples if len(ex["input_ids"]) < cfg.max_seq_len]
    if len(filtered) < len(examples):
        warnings.warn(f"Dropped {len(examples) - len(filtered)} examples where the prompt was longer than "
                      f"{cfg.max_seq_len}.")
    return filtered


class Seq2SeqFinetuningCollator:
    def __init__(self, max_seq_len: int):
        self.max_seq_len = max_seq_len
        self._warned_context = False

    def __call__(self, examples: list[dict]) -> dict:
        rows = []
        for ex in examples:
            context, target = ex["input_ids"], ex["labels"]
            if len(context) >= self.max_seq_len:
                if not self._warned_context:
                    warnings.warn("Skipping example because CONTEXT length leaves no room for TARGET tokens")
                    self._warned_context = True
                continue
            seq = (context + target)[:self.max_seq_len]
            rows.append(seq + [0] * (self.max_seq_len - len(seq)))
        return {"input_ids": np.asarray(rows, np.int32).reshape(-1, self.max_seq_len)}


class DistributedSampler:
    def __init__(self, dataset: list, rank: int, world: int):
        self.indices = list(range(rank, len(dataset) - len(dataset) % world, world))

    def __iter__(self):
        return iter(self.indices)


def build_finetuning_dataloader(cfg: FinetuneConfig):
    dataset = build_from_hf(cfg)
    sampler = DistributedSampler(dataset, jax.process_index(), jax.process_count())
    collate = Seq2SeqFinetuningCollator(cfg.max_seq_len)
    idx = list(sampler)
    for i in range(0, len(idx) - cfg.device_train_batch_size + 1, cfg.device_train_batch_size):
        yield collate([dataset[j] for j in idx[i:i + cfg.device_train_batch_size]])


class Trainer:
    def __init__(self, cfg: FinetuneConfig, mesh):
        self.cfg = cfg
        self.sharding = NamedSharding(mesh, P("data"))
        self.emb = jnp.full((VOCAB + 1,), 0.1, jnp.float32)
        self._grad = jax.jit(jax.value_and_grad(self._loss))

    @staticmethod
    def _loss(emb, ids):
        return jnp.mean((emb[ids] - 0.5) ** 2)

    def _microbatches(self, batch: dict):
        ids, mbs = batch["input_ids"], self.cfg.device_train_microbatch_size
        return [ids[i:i + mbs] for i in range(0, len(ids), mbs)]

    def train_batch(self, batch: dict) -> float:
        total_loss, grads = 0.0, jnp.zeros_like(self.emb)
        for mb in self._microbatches(batch):
            loss, g = self._grad(self.emb, jax.make_array_from_process_local_data(self.sharding, mb))
            total_loss, grads = total_loss + float(loss), grads + g
        self.emb = self.emb - 0.5 * grads
        return total_loss

    def fit(self, dataloader) -> list[float]:
        return [self.train_batch(batch) for batch in dataloader]


def main():
    cfg = FinetuneConfig()
    mesh = jax.sharding.Mesh(np.array(jax.devices()), ("data",))
    trainer = Trainer(cfg, mesh)
    losses = trainer.fit(build_finetuning_dataloader(cfg))
    print("RESULT", "losses=" + ",".join(f"{v:.5f}" for v in losses))


if __name__ == "__main__":
    main()
