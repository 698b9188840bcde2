# Speculative decoding under data parallelism: a rank whose longest sequence no longer fits the drafter skips drafting
# Source: https://github.com/vllm-project/vllm/pull/40589
# Written for the mcjax sealed12 evaluation (not copied); run as 2 processes by benchmarks/sealed12/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("dp",))
DP = NamedSharding(MESH, P("dp"))


@dataclass
class SpecConfig:
    vocab: int = 8
    num_spec_tokens: int = 3
    drafter_max_model_len: int = 32
    decode_steps: int = 5
    max_num_seqs: int = 2  # every rank pads its batch to this many rows


def target_step(w, last):
    return jnp.argmax(w[last], axis=-1).astype(jnp.int32)


def draft_tokens(w, last, k):
    toks = [last]
    for _ in range(k):
        toks.append(jnp.argmax(w[toks[-1]], axis=-1).astype(jnp.int32))
    return jnp.stack(toks[1:], axis=-1)


class Drafter:
    def __init__(self, cfg, w):
        self.cfg = cfg
        self.w = w
        self._propose = jax.jit(draft_tokens, static_argnums=2)

    def propose(self, last):
        padded = np.zeros(self.cfg.max_num_seqs, np.int32)
        padded[:len(last)] = last
        out = self._propose(self.w, jax.make_array_from_process_local_data(DP, padded), self.cfg.num_spec_tokens)
        return np.asarray(multihost_utils.global_array_to_host_local_array(out, MESH, P("dp")))[:len(last)]

    def dummy_run(self):
        self.propose(np.zeros(0, np.int32))


class ModelRunner:
    def __init__(self, cfg):
        v = cfg.vocab
        self.cfg = cfg
        # vocab rows of both models are partitioned over the data-parallel ranks (expert/vocab parallel)
        self.target_w = jax.device_put(np.roll(np.eye(v, dtype=np.float32), 1, axis=1), DP)
        self.drafter = Drafter(cfg, jax.device_put(np.roll(np.eye(v, dtype=np.float32), 1, axis=1) * 0.9, DP))
        self._target = jax.jit(target_step)

    def input_fits_in_drafter(self, seq_lens):
        return int(seq_lens.max()) + self.cfg.num_spec_tokens <= self.cfg.drafter_max_model_len

    def execute_model(self, last, seq_lens):
        padded = np.zeros(self.cfg.max_num_seqs, np.int32)
        padded[:len(last)] = last
        out = self._target(self.target_w, jax.make_array_from_process_local_data(DP, padded))
        sampled = np.asarray(multihost_utils.global_array_to_host_local_array(out, MESH, P("dp")))[:len(last)]
        drafts = None
        if self.input_fits_in_drafter(seq_lens + 1):
            drafts = self.drafter.propose(sampled)
        return sampled, drafts


def local_requests():
    # each DP engine serves its own requests; rank 1's are long-context and near the drafter's limit
    last = {0: [1, 2], 1: [3, 5]}[jax.process_index()]
    lens = {0: [10, 12], 1: [26, 27]}[jax.process_index()]
    return np.array(last, np.int32), np.array(lens, np.int32)


def main():
    cfg = SpecConfig()
    runner = ModelRunner(cfg)
    last, seq_lens = local_requests()
    generated, drafted = [], 0
    for _ in range(cfg.decode_steps):
        sampled, drafts = runner.execute_model(last, seq_lens)
        drafted += 0 if drafts is None else drafts.size
        generated.append(sampled.tolist())
        last, seq_lens = sampled, seq_lens + 1
    summary = np.array([np.sum(generated), drafted], np.int32)
    all_summary = np.asarray(multihost_utils.process_allgather(summary))
    print("RESULT token_sum_and_drafts", all_summary.tolist())


if __name__ == "__main__":
    main()
