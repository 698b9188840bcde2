# Autotuner for a tensor-parallel MoE op: a rank-local profiling-cache hit decides whether to profile
# Source: https://github.com/NVIDIA/TensorRT-LLM/pull/14240 (port of a TensorRT-LLM
# torch.distributed autotuner deadlock to multi-process JAX)
# Written for the mcjax sealed8 evaluation (not copied); run as 2 processes by benchmarks/sealed8/run_pair.py.
import contextlib
import os
import time

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

HIDDEN = 8


def tp_all_reduce(x: np.ndarray) -> np.ndarray:
    return np.asarray(multihost_utils.process_allgather(x)).sum(axis=0)


class MoEReduceRunner:
    """Expert GEMM on this rank's routed tokens, then an all-reduce of the partial output."""

    def __init__(self, w: np.ndarray):
        self.w = jnp.asarray(w)

    def get_valid_tactics(self, num_tokens: int):
        return [8, 16, 32]  # chunk sizes of the expert GEMM kernel

    def forward(self, tokens: np.ndarray, tactic: int = -1) -> np.ndarray:
        chunk = tactic if tactic > 0 else len(tokens) or 1
        partial = np.zeros(HIDDEN, np.float32)
        for s in range(0, len(tokens), chunk):
            partial += np.asarray(jnp.sum(jnp.asarray(tokens[s:s + chunk]) @ self.w, axis=0))
        return tp_all_reduce(partial)


class AutoTuner:
    _instance = None

    def __init__(self, warmup: int = 1, repeat: int = 2):
        self.warmup, self.repeat = warmup, repeat
        self.profiling_cache = {}
        self.is_tuning_mode = False

    @classmethod
    def get(cls):
        if cls._instance is None:
            cls._instance = AutoTuner()
        return cls._instance

    @staticmethod
    def bucket(num_tokens: int) -> int:
        return 1 << max(int(num_tokens) - 1, 0).bit_length()

    def search_cache(self, custom_op: str, num_tokens: int):
        key = (custom_op, self.bucket(num_tokens))
        if key in self.profiling_cache:
            return True, self.profiling_cache[key]
        return False, -1

    def _profile_single_kernel(self, runner, tokens, tactic) -> float:
        for _ in range(self.warmup):
            runner.forward(tokens, tactic)
        start = time.perf_counter()
        for _ in range(self.repeat):
            runner.forward(tokens, tactic)
        return (time.perf_counter() - start) / self.repeat

    def choose_one(self, custom_op: str, runner: MoEReduceRunner, tokens: np.ndarray) -> int:
        is_cache_hit, tactic = self.search_cache(custom_op, len(tokens))
        if not self.is_tuning_mode or is_cache_hit:
            return tactic
        timings = {t: self._profile_single_kernel(runner, tokens, t) for t in runner.get_valid_tactics(len(tokens))}
        tactic = min(timings, key=timings.get)
        self.profiling_cache[(custom_op, self.bucket(len(tokens)))] = tactic
        return tactic


@contextlib.contextmanager
def autotune(tune_mode: bool = True):
    old = AutoTuner.get().is_tuning_mode
    AutoTuner.get().is_tuning_mode = tune_mode
    try:
        yield
    finally:
        AutoTuner.get().is_tuning_mode = old


def moe_forward(runner: MoEReduceRunner, tokens: np.ndarray) -> np.ndarray:
    tactic = AutoTuner.get().choose_one("trtllm::moe_reduce", runner, tokens)
    return runner.forward(tokens, tactic)


def routed_tokens(step: int, pid: int) -> np.ndarray:
    # expert-parallel routing: how many tokens land on this rank varies per rank and per step
    counts = [[16, 16], [16, 40], [12, 30]][step]
    rng = np.random.default_rng(1000 * step + pid)
    return rng.normal(size=(counts[pid], 4)).astype(np.float32)


def main():
    runner = MoEReduceRunner(np.random.default_rng(0).normal(size=(4, HIDDEN)).astype(np.float32))
    outputs = []
    with autotune():  # warmup: tune on representative batches
        for step in range(3):
            out = moe_forward(runner, routed_tokens(step, jax.process_index()))
            outputs.append(round(float(np.sum(out)), 3))
    print(f"RESULT moe_outputs {outputs}", flush=True)
    multihost_utils.sync_global_devices("warmup_done")
    print("RESULT warmup done", flush=True)


if __name__ == "__main__":
    main()
