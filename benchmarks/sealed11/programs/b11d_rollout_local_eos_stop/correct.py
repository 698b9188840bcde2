# RL rollout with a parameter-partitioned actor: every process keeps decoding until all processes' responses hit EOS
# Source: https://github.com/deepspeedai/DeepSpeed/issues/8321
# Written for the mcjax sealed11 evaluation (not copied); run as 2 processes by benchmarks/sealed11/run_pair.py.
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
class RolloutConfig:
    vocab: int = 8
    eos_token_id: int = 0
    max_new_tokens: int = 8
    ppo_steps: int = 2
    lr: float = 0.1


MESH = Mesh(np.array(jax.devices()), ("dp",))
PARTITIONED = NamedSharding(MESH, P("dp"))  # ZeRO-3: every weight's rows live on different processes


class HybridActor:
    def __init__(self, cfg):
        v = cfg.vocab
        self.cfg = cfg
        self.emb = jax.device_put(np.eye(v, dtype=np.float32), PARTITIONED)
        self.head = jax.device_put(np.roll(np.eye(v, dtype=np.float32), 1, axis=1), PARTITIONED)
        self._decode = jax.jit(lambda e, h, t: jnp.argmax(e[t] @ h, axis=-1).astype(jnp.int32))
        self._score = jax.jit(lambda e, h, t: jnp.mean(jnp.max(e[t] @ h, axis=-1)))

    def decode_step(self, local_last):
        g = jax.make_array_from_process_local_data(PARTITIONED, local_last)
        out = self._decode(self.emb, self.head, g)
        return np.asarray(multihost_utils.global_array_to_host_local_array(out, MESH, P("dp")))

    def generate(self, prompts):
        cfg = self.cfg
        last = prompts.copy()
        responses = np.full((len(prompts), cfg.max_new_tokens), cfg.eos_token_id, np.int32)
        finished = last == cfg.eos_token_id
        for t in range(cfg.max_new_tokens):
            if not multihost_utils.process_allgather(np.int32(not finished.all())).any():
                break
            nxt = np.where(finished, cfg.eos_token_id, self.decode_step(last))
            responses[:, t] = nxt
            finished |= nxt == cfg.eos_token_id
            last = nxt
        return responses

    def ppo_update(self, responses):
        g = jax.make_array_from_process_local_data(PARTITIONED, responses)
        score = float(self._score(self.emb, self.head, g))
        self.head = jax.jit(lambda h: h * (1.0 - self.cfg.lr * score))(self.head)
        return score


def local_prompts():
    # each data-parallel rank samples its own prompts; how far they are from EOS differs by construction
    return np.array({0: [3, 4], 1: [6, 7]}[jax.process_index()], np.int32)


def main():
    cfg = RolloutConfig()
    actor = HybridActor(cfg)
    scores, lengths = [], []
    for _ in range(cfg.ppo_steps):
        responses = actor.generate(local_prompts())
        lengths.append(int((responses != cfg.eos_token_id).sum()))
        scores.append(round(actor.ppo_update(responses), 5))
    all_lengths = np.asarray(multihost_utils.process_allgather(np.array(lengths, np.int32))).reshape(-1)
    print("RESULT response_tokens", all_lengths.tolist())
    print("RESULT scores", scores)


if __name__ == "__main__":
    main()
