# PPO rollout generation with ZeRO-3-style sharded actor weights: every process keeps decoding until all processes hit EOS (synced_gpus)
# Source: https://github.com/deepspeedai/DeepSpeedExamples/pull/636
# Written for the mcjax sealed14 evaluation (not copied); run as 2 processes by benchmarks/sealed14/run_pair.py.
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
ROWS = NamedSharding(MESH, P("dp"))
SHARDED_W = NamedSharding(MESH, P(None, "dp"))   # ZeRO-3: every weight partitioned across ranks
REPL = NamedSharding(MESH, P())


@dataclass
class GenConfig:
    vocab: int = 16
    eos_id: int = 0
    max_answer_len: int = 8
    prompts_per_rank: int = 2


def init_actor(cfg):
    w = np.random.default_rng(0).normal(size=(cfg.vocab, cfg.vocab)).astype(np.float32)
    return jax.device_put(w, SHARDED_W)


@jax.jit
def decode_step(w, tokens, pos, stop_at):
    logits = jax.nn.one_hot(tokens, w.shape[0]) @ w               # gathers the sharded weight
    logits = logits.at[:, 0].add(jnp.where(pos >= stop_at, 1e4, -1e4))
    return jax.lax.with_sharding_constraint(jnp.argmax(logits, axis=-1).astype(jnp.int32), ROWS)


@jax.jit
def reward_fn(w, tokens):
    return jnp.mean(jnp.sum(jax.nn.one_hot(tokens, w.shape[0]) @ w, axis=-1))


class PPOTrainer:
    def __init__(self, cfg):
        self.cfg, self.actor = cfg, init_actor(cfg)
        self.rank = jax.process_index()

    def local_prompts(self, step):
        rng = np.random.default_rng(100 * self.rank + step)
        toks = rng.integers(1, self.cfg.vocab, size=self.cfg.prompts_per_rank).astype(np.int32)
        stop = np.full(self.cfg.prompts_per_rank, 2 + 3 * self.rank, np.int32)   # rank-specific answer length
        return toks, stop

    def generate(self, toks, stop):
        tokens = jax.make_array_from_process_local_data(ROWS, toks)
        stop_at = jax.make_array_from_process_local_data(ROWS, stop)
        seq = [toks]
        for pos in range(self.cfg.max_answer_len):
            tokens = decode_step(self.actor, tokens, jnp.int32(pos), stop_at)
            local = np.concatenate([np.asarray(s.data) for s in tokens.addressable_shards])
            seq.append(local)
            finished = bool(np.all(local == self.cfg.eos_id))
            finished = bool(np.all(multihost_utils.process_allgather(np.array(finished))))   # synced_gpus=True: stop only when every rank has finished
            if finished:
                break
        return tokens, np.stack(seq, axis=1)

    def generate_experience(self, step):
        toks, stop = self.local_prompts(step)
        last, seq = self.generate(toks, stop)
        reward = reward_fn(self.actor, last)
        return float(reward), seq.shape[1]


def main():
    trainer = PPOTrainer(GenConfig())
    rewards = []
    for step in range(2):
        r, _ = trainer.generate_experience(step)
        rewards.append(round(r, 4))
    multihost_utils.sync_global_devices("rollout done")
    print("RESULT rewards", rewards)


if __name__ == "__main__":
    main()
