# Validator with steps=-1 runs until this process's packed validation shard is exhausted; shards pack to different batch counts
# Source: https://github.com/pytorch/torchtitan/issues/1618
# Written for the mcjax sealed10 evaluation (not copied); run as 2 processes by benchmarks/sealed10/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class ValidationConfig:
    seq_len: int = 8
    steps: int = -1       # -1: consume the whole validation set
    infinite: bool = False
    vocab: int = 16
    dim: int = 4


MESH = Mesh(np.array(jax.devices()), ("fsdp",))
SHARD = NamedSharding(MESH, P("fsdp"))


def validation_documents():
    """Each data-parallel rank reads its own documents; their lengths vary (as in c4_validation)."""
    rank = jax.process_index()
    rng = np.random.default_rng(1618 + rank)
    lengths = {0: [11, 7, 9, 5], 1: [13, 12, 10, 9, 8]}[rank]
    return [rng.integers(1, 16, size=n) for n in lengths]


class PackedValidationLoader:
    """Concatenates documents and cuts fixed seq_len samples, dropping the partial tail."""

    def __init__(self, cfg, infinite):
        self.cfg, self.infinite = cfg, infinite
        buf = np.concatenate(validation_documents())
        n = len(buf) // cfg.seq_len
        self.samples = buf[: n * cfg.seq_len].reshape(n, cfg.seq_len).astype(np.int32)

    def __iter__(self):
        while True:
            for row in self.samples:
                yield row[None, :]
            if not self.infinite:
                return


def init_model(cfg):
    rng = np.random.default_rng(0)
    emb = rng.normal(scale=0.2, size=(cfg.vocab, cfg.dim)).astype(np.float32)
    out = rng.normal(scale=0.2, size=(cfg.dim, cfg.vocab)).astype(np.float32)
    return {"emb": jax.device_put(emb, SHARD), "out": jax.device_put(out, SHARD)}  # FSDP-sharded


@jax.jit
def eval_loss(params, tokens):
    logits = params["emb"][tokens[:, :-1]] @ params["out"]   # parameter all-gather across ranks
    logp = jax.nn.log_softmax(logits)
    tgt = tokens[:, 1:]
    return -jnp.mean(jnp.take_along_axis(logp, tgt[..., None], axis=-1))


class Validator:
    def __init__(self, cfg):
        self.cfg = cfg
        self.loader = PackedValidationLoader(cfg, infinite=cfg.infinite)

    def validate(self, params):
        total, num_steps = 0.0, 0
        for batch in self.loader:
            if self.cfg.steps != -1 and num_steps >= self.cfg.steps:
                break
            tokens = jax.make_array_from_process_local_data(SHARD, batch)
            total += float(eval_loss(params, tokens))
            num_steps += 1
        return total / max(num_steps, 1), num_steps


def main():
    cfg = ValidationConfig()
    params = init_model(cfg)
    loss, steps = Validator(cfg).validate(params)
    mean_loss = np.asarray(multihost_utils.process_allgather(np.float32(loss))).mean()
    print("RESULT val_steps", steps)
    print("RESULT val_loss", f"{mean_loss:.5f}")


if __name__ == "__main__":
    main()
