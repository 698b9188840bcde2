import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, HIDDEN, EOS = 48, 16, 0
MSG_CONTINUE, MSG_ABORT = 0, 1


def is_daemon():
    return jax.process_index() != 0


class StreamSender:
    """The HTTP chunk stream of one chat request; the client may hang up mid-stream."""

    def __init__(self, client_reads):
        self.client_reads, self.sent = client_reads, []

    def send(self, chunk):
        if len(self.sent) >= self.client_reads:
            raise ConnectionResetError("client disconnected")
        self.sent.append(chunk)


@dataclass
class Sequence:
    seq_id: int
    tokens: list
    max_tokens: int
    sender: StreamSender = None
    finish_reason: str = None
    output: list = field(default_factory=list)


class TensorParallelPipeline:
    """Each process holds half of the hidden units; logits are all-reduced across the shards."""

    def __init__(self):
        rng = np.random.default_rng(0)
        emb = rng.normal(size=(VOCAB, HIDDEN)).astype(np.float32)
        out = rng.normal(size=(HIDDEN, VOCAB)).astype(np.float32)
        shard = slice(jax.process_index() * HIDDEN // 2, (jax.process_index() + 1) * HIDDEN // 2)
        self.emb, self.out = jnp.asarray(emb[:, shard]), jnp.asarray(out[shard])
        self._partial = jax.jit(lambda e, o, ids: jnp.tanh(e[ids].mean(0)) @ o)

    def forward(self, token_ids):
        partial = np.asarray(self._partial(self.emb, self.out, jnp.asarray(token_ids)))
        return np.asarray(multihost_utils.process_allgather(partial)).sum(0)


class LLMEngine:
    def __init__(self):
        self.pipeline = TensorParallelPipeline()

    def sync_process(self, msg_send, payload=-1):
        msg = np.array([msg_send, payload], dtype=np.int32)
        return tuple(int(v) for v in multihost_utils.broadcast_one_to_all(msg, is_source=not is_daemon()))

    def generate_once(self, seq):
        while seq.finish_reason is None:
            logits = self.pipeline.forward(seq.tokens)
            token = int(np.argmax(logits))
            seq.tokens.append(token)
            seq.output.append(token)
            if token == EOS or len(seq.output) >= seq.max_tokens:
                seq.finish_reason = "stop" if token == EOS else "length"
            if seq.sender is not None:
                try:
                    seq.sender.send({"id": seq.seq_id, "delta": token})
                except ConnectionResetError:
                    print("Send stream response error!")
                    seq.finish_reason = "Abort"
                    break
            self.sync_process(MSG_CONTINUE)
        return seq


def main():
    engine = LLMEngine()
    streaming = Sequence(1, [5, 17, 9], max_tokens=12,
                         sender=None if is_daemon() else StreamSender(client_reads=3))
    engine.generate_once(streaming)
    completion = engine.generate_once(Sequence(2, [3, 8, 21, 2], max_tokens=6))
    served = np.asarray(multihost_utils.process_allgather(np.int32(len(streaming.output))))
    print(f"rank {jax.process_index()}: stream finished with {streaming.finish_reason}")
    print("RESULT completion_tokens", completion.output)
    print("RESULT completion_finish", completion.finish_reason)
    print("RESULT stream_tokens_per_rank", served.tolist())


if __name__ == "__main__":
    main()
