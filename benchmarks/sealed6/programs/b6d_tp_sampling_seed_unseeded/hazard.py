# Tensor-parallel text-generation handler: a request without a random_seed gets one drawn from each
# process's global generator, which was never seeded, so the ranks sample different tokens
# Source: https://github.com/mosaicml/examples/pull/363
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

VOCAB, DIM = 16, 8
END_ID = 0


class TensorParallelGPT:
    """Decoder whose output projection is split over the vocabulary across the ranks."""

    def __init__(self):
        self.mesh = jax.sharding.Mesh(np.array(jax.devices()), ("tp",))
        emb = np.cos(np.arange(VOCAB * DIM, dtype=np.float32)).reshape(VOCAB, DIM)
        self.emb = jax.device_put(emb, NamedSharding(self.mesh, P()))
        self.proj = jax.device_put(emb.T.copy(), NamedSharding(self.mesh, P(None, "tp")))
        self.repl = NamedSharding(self.mesh, P())
        self._logits = jax.jit(self._forward, out_shardings=self.repl)

    @staticmethod
    def _forward(emb, proj, tokens):
        h = jnp.mean(emb[tokens], axis=0)
        return h @ proj

    def next_token_logits(self, tokens):
        arr = jax.device_put(np.asarray(tokens, np.int32), self.repl)
        return np.asarray(self._logits(self.emb, self.proj, arr))


class MPTFTModelHandler:
    DEFAULT_GENERATE_KWARGS = {"max_new_tokens": 12, "temperature": 1.5, "top_k": 6}

    def __init__(self, tensor_para_size):
        self.tensor_para_size = tensor_para_size
        self.model = TensorParallelGPT()
        self.end_id = END_ID

    def _sample(self, logits, temperature, top_k, rng):
        top = np.argsort(logits)[::-1][:top_k]
        p = np.exp((logits[top] - logits[top].max()) / temperature)
        return int(rng.choice(top, p=p / p.sum()))

    def generate(self, prompt_ids, **kwargs):
        cfg = {**self.DEFAULT_GENERATE_KWARGS, **kwargs}
        random_seed = cfg.get("random_seed")
        if random_seed is None:
            random_seed = int(np.random.randint(0, 2**31 - 1))
        rng = np.random.default_rng(random_seed)
        tokens = list(prompt_ids)
        for _ in range(cfg["max_new_tokens"]):
            nxt = self._sample(self.model.next_token_logits(tokens), cfg["temperature"], cfg["top_k"], rng)
            if nxt == self.end_id:
                break
            tokens.append(nxt)
        return tokens[len(prompt_ids):]

    def predict(self, model_requests):
        return [self.generate(req["input_ids"], **req.get("parameters", {})) for req in model_requests]


if __name__ == "__main__":
    handler = MPTFTModelHandler(tensor_para_size=jax.process_count())
    requests = [{"input_ids": [3, 5, 7]}, {"input_ids": [2, 9]}, {"input_ids": [11, 4, 4, 1]},
                {"input_ids": [6], "parameters": {"max_new_tokens": 8}}]
    for i, out in enumerate(handler.predict(requests)):
        print("RESULT", i, " ".join(map(str, out)))
