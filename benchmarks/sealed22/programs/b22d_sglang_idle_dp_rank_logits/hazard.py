# A small data-parallel-attention serving engine: each DP rank schedules the requests routed to
# it, the ranks pad their batches to a common token count for the shared MLP (all-gather), and
# the DP LM head gathers the sampled tokens of every rank so the router can stream them back.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

HIDDEN, VOCAB = 8, 32
IDLE, EXTEND, DECODE = "idle", "extend", "decode"


@dataclass
class Req:
    rid: int
    prompt: list
    output: list = field(default_factory=list)


@dataclass
class ForwardBatch:
    mode: str
    reqs: list
    extend_seq_lens: np.ndarray
    input_ids: np.ndarray


class Model:
    def __init__(self, seed=0):
        rng = np.random.default_rng(seed)
        self.embed = jnp.asarray(rng.normal(size=(VOCAB, HIDDEN)).astype(np.float32))
        self.w_mlp = jnp.asarray(rng.normal(size=(HIDDEN, HIDDEN)).astype(np.float32) / 3)
        self.lm_head = jnp.asarray(rng.normal(size=(HIDDEN, VOCAB)).astype(np.float32))
        self._mlp = jax.jit(lambda h, w: jnp.tanh(h @ w) + h)

    def forward(self, batch, max_tokens):
        hidden = np.asarray(self.embed[batch.input_ids]) if len(batch.input_ids) else np.zeros((0, HIDDEN), np.float32)
        padded = np.zeros((max_tokens, HIDDEN), np.float32)
        padded[:len(hidden)] = hidden
        gathered = np.asarray(multihost_utils.process_allgather(padded))
        out = np.asarray(self._mlp(jnp.asarray(gathered), self.w_mlp))
        return out[jax.process_index(), :len(hidden)]


class LogitsProcessor:
    def __init__(self, model):
        self.model = model

    def __call__(self, hidden_states, batch):
        if batch.mode == EXTEND:
            last_index = np.cumsum(batch.extend_seq_lens) - 1
            pruned = hidden_states[last_index]
        else:
            pruned = hidden_states
        return np.asarray(pruned @ np.asarray(self.model.lm_head))


class Scheduler:
    def __init__(self, dp_rank, dp_size, model):
        self.dp_rank, self.dp_size = dp_rank, dp_size
        self.model = model
        self.logits_processor = LogitsProcessor(model)
        self.running = []

    def route(self, requests):
        self.running = [r for r in requests if r.rid % self.dp_size == self.dp_rank]

    def get_next_batch(self, step):
        if not self.running:
            return ForwardBatch(IDLE, [], np.zeros((0,), np.int32), np.zeros((0,), np.int32))
        if step == 0:
            lens = np.array([len(r.prompt) for r in self.running], np.int32)
            ids = np.concatenate([np.array(r.prompt, np.int32) for r in self.running])
            return ForwardBatch(EXTEND, self.running, lens, ids)
        ids = np.array([r.output[-1] for r in self.running], np.int32)
        return ForwardBatch(DECODE, self.running, np.ones(len(ids), np.int32), ids)

    def prepare_mlp_sync_batch(self, batch):
        counts = np.asarray(multihost_utils.process_allgather(np.array([len(batch.input_ids)], np.int32)))
        any_extend = np.asarray(multihost_utils.process_allgather(np.array([batch.mode == EXTEND], np.int32)))
        if batch.mode == IDLE and any_extend.any():
            batch = ForwardBatch(EXTEND, [], np.zeros((1,), np.int32), batch.input_ids)
        return batch, int(counts.max())

    def run_step(self, step):
        batch, max_tokens = self.prepare_mlp_sync_batch(self.get_next_batch(step))
        hidden = self.model.forward(batch, max_tokens)
        logits = self.logits_processor(hidden, batch)
        next_ids = logits.argmax(-1).astype(np.int32)
        slots = np.full((4,), -1, np.int32)
        slots[:len(batch.reqs)] = next_ids[:len(batch.reqs)]
        all_tokens = np.asarray(multihost_utils.process_allgather(slots))
        for req, tok in zip(batch.reqs, next_ids):
            req.output.append(int(tok))
        return all_tokens


def main():
    dp_rank, dp_size = jax.process_index(), jax.process_count()
    model = Model()
    scheduler = Scheduler(dp_rank, dp_size, model)
    requests = [Req(rid=0, prompt=[3, 14, 15, 9, 2, 6])]
    scheduler.route(requests)
    streamed = []
    for step in range(4):
        all_tokens = scheduler.run_step(step)
        streamed.append(int(all_tokens[0, 0]))
    print(f"dp rank {dp_rank}: {len(scheduler.running)} local requests")
    print("RESULT request0_tokens", streamed)
    print("RESULT steps", len(streamed))


if __name__ == "__main__":
    main()
