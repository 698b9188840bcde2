# Multi-turn agent (tool-calling) SFT recipe in the style of NeMo Automodel's train_ft:
# data-parallel training with a gradient all-reduce, and a periodic validation that runs a
# ToolCallAccuracyEvaluator on each DP rank's shard of the tool-call validation set and
# reduces the evaluator's metrics across the DP group.
import json
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TOOLS = ["get_weather", "search_flights", "book_hotel", "convert_currency"]
SKIP_REASONS = ("no_tool_call", "parse_error")
FEATURES = 8

VAL_SAMPLES = [
    {"prompt": 3, "reference": '{"name": "get_weather", "arguments": {"city": "Oslo"}}'},
    {"prompt": 7, "reference": '{"name": "search_flights", "arguments": {"to": "LIS"}}'},
    {"prompt": 1, "reference": '{"name": "book_hotel", "arguments": {"nights": 2'},
    {"prompt": 5, "reference": '{"name": "convert_currency", "arguments": {"to": "EUR"}}'},
    {"prompt": 2, "reference": '{"name": "get_weather", "arguments": {"city": "Rome"}}'},
    {"prompt": 6, "reference": '{"role": "assistant", "content": "Sure, the hotel is booked."}'},
    {"prompt": 4, "reference": '{"name": "book_hotel", "arguments": {"nights": 3}}'},
    {"prompt": 0, "reference": "I could not find any flights for that date."},
]


def dp_all_reduce(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x, np.float32))).sum(0)


class ToolCallAccuracyEvaluator:
    def __init__(self, predict_fn):
        self.predict_fn = predict_fn

    def evaluate(self, params, samples):
        metrics = {"exact_match": 0.0, "name_match": 0.0, "_count": 0.0}
        for sample in samples:
            try:
                ref = json.loads(sample["reference"])
            except json.JSONDecodeError:
                key = "_skip_parse_error"
                metrics[key] = metrics.get(key, 0.0) + 1
                continue
            if not isinstance(ref, dict) or "name" not in ref:
                key = "_skip_no_tool_call"
                metrics[key] = metrics.get(key, 0.0) + 1
                continue
            pred = TOOLS[int(self.predict_fn(params, sample["prompt"]))]
            metrics["name_match"] += float(pred == ref["name"])
            metrics["exact_match"] += float(pred == ref["name"] and len(ref["arguments"]) == 1)
            metrics["_count"] += 1
        return metrics


class AgentSFTRecipe:
    def __init__(self, dp_rank, dp_size, lr=0.3):
        rng = np.random.default_rng(11)
        self.dp_rank, self.dp_size, self.lr = dp_rank, dp_size, lr
        self.embed = rng.normal(size=(8, FEATURES)).astype(np.float32)
        self.params = jnp.zeros((FEATURES, len(TOOLS)))
        self._grad = jax.jit(jax.grad(self._loss))
        self.evaluator = ToolCallAccuracyEvaluator(self._predict)
        self.val_shard = VAL_SAMPLES[dp_rank::dp_size]

    def _loss(self, params, x, y):
        logits = x @ params
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))

    def _predict(self, params, prompt):
        return jnp.argmax(self.embed[prompt] @ params)

    def train_step(self, step):
        rng = np.random.default_rng(100 * step + self.dp_rank)
        prompts = rng.integers(0, 8, size=4)
        labels = prompts % len(TOOLS)
        grads = self._grad(self.params, self.embed[prompts], jnp.asarray(labels))
        grads = dp_all_reduce(grads) / self.dp_size
        self.params = self.params - self.lr * grads

    def _run_validation(self):
        metrics = self.evaluator.evaluate(self.params, self.val_shard)
        keys = ["exact_match", "name_match", "_count"] + [f"_skip_{r}" for r in SKIP_REASONS]
        packed = dp_all_reduce([metrics.get(k, 0.0) for k in keys])
        return {k: float(v) for k, v in zip(keys, packed)}

    def run_train_validation_loop(self, max_steps=6, val_every=3):
        history = []
        for step in range(1, max_steps + 1):
            self.train_step(step)
            if step % val_every == 0:
                history.append((step, self._run_validation()))
        return history


def main():
    recipe = AgentSFTRecipe(jax.process_index(), jax.process_count())
    history = recipe.run_train_validation_loop()
    for step, metrics in history:
        print("RESULT val", step, sorted(metrics.items()))
    final = np.asarray(multihost_utils.process_allgather(np.asarray(recipe.params)))
    print("RESULT params_in_sync", bool(np.allclose(final, final[0])))


if __name__ == "__main__":
    main()
