# Context-parallel log-prob loss: a process whose half of the sequence has no response tokens returns model-precision log-probs
# Source: https://github.com/radixark/miles/pull/2827
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class LossConfig:
    vocab: int = 32
    seq_len: int = 16
    model_dtype: str = "bfloat16"


@dataclass
class Sample:
    tokens: np.ndarray
    prompt_len: int


def make_samples(cfg):
    rng = np.random.default_rng(7)  # same rollouts on every process
    samples = []
    for prompt_len in (5, 11, 3):  # the second rollout has a long prompt
        samples.append(Sample(rng.integers(0, cfg.vocab, cfg.seq_len), prompt_len))
    return samples


def fake_logits(cfg, tokens, start, stop):
    """Model-precision logits for positions [start, stop) of the sequence (this CP rank's half)."""
    pos = np.arange(start, stop)[:, None]
    vocab = np.arange(cfg.vocab)[None, :]
    table = np.sin(0.37 * pos + 0.11 * vocab + 0.05 * tokens[start:stop, None])
    return jnp.asarray(table, dtype=cfg.model_dtype)


def local_response_logprobs(logits, tokens, start, stop, prompt_len):
    """Log-probs of the response tokens that fall inside this rank's contiguous half."""
    first = max(start, prompt_len)
    if first >= stop:
        return jnp.zeros((0,), dtype=logits.dtype)
    rows = logits[first - start: stop - start].astype(jnp.float32)
    logp = jax.nn.log_softmax(rows, axis=-1)
    picked = jnp.take_along_axis(logp, jnp.asarray(tokens[first:stop])[:, None], axis=-1)
    return picked[:, 0]


class ContextParallelLoss:
    def __init__(self, cfg, mesh):
        self.cfg = cfg
        self.cp_rank = jax.process_index()
        self.cp_size = jax.process_count()
        self.sharding = NamedSharding(mesh, P("cp"))
        self._allreduce = jax.jit(lambda b: jnp.sum(b, axis=0), out_shardings=NamedSharding(mesh, P()))

    def my_range(self):
        chunk = self.cfg.seq_len // self.cp_size
        return self.cp_rank * chunk, (self.cp_rank + 1) * chunk

    def allgather_cp_redistribute(self, value, start, prompt_len):
        """Every rank gets the full response log-probs: scatter into a zero buffer, then all-reduce."""
        n_response = self.cfg.seq_len - prompt_len
        buf = np.zeros((1, n_response), dtype=value.dtype)
        offset = max(start, prompt_len) - prompt_len
        buf[0, offset: offset + value.shape[0]] = np.asarray(value)
        return self._allreduce(jax.make_array_from_process_local_data(self.sharding, buf))

    def sample_loss(self, sample):
        start, stop = self.my_range()
        logits = fake_logits(self.cfg, sample.tokens, start, stop)
        local = local_response_logprobs(logits, sample.tokens, start, stop, sample.prompt_len)
        full = self.allgather_cp_redistribute(local, start, sample.prompt_len)
        return -float(jnp.mean(full.astype(jnp.float32))), np.asarray(full, np.float32)


def main():
    cfg = LossConfig()
    mesh = Mesh(np.array(jax.devices()), ("cp",))
    loss_fn = ContextParallelLoss(cfg, mesh)
    losses, firsts = [], []
    for sample in make_samples(cfg):
        loss, full = loss_fn.sample_loss(sample)
        losses.append(round(loss, 4))
        firsts.append(round(float(full[0]), 4))
    print("RESULT losses", losses)
    print("RESULT first_logprobs", firsts)


main()
