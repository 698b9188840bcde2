# RL rollout step: each process scores its share of generations with verifiable rewards run asynchronously, then
# advantages are normalized over the global batch
# Source: https://github.com/databricks/compose-rl/pull/87
# Written for the mcjax sealed18 evaluation (not copied); run as 2 processes by benchmarks/sealed18/run_pair.py.
import logging
import os
import threading

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

log = logging.getLogger(__name__)
ROLLOUTS = [
    ("2+2", "The answer is \\boxed{4}", "4"),
    ("3*5", "so we get \\boxed{15}", "15"),
    ("10-7", "\\boxed{2}", "3"),
    ("6/2", "It equals \\boxed{3}.", "3"),
    ("9+1", "\\boxed{10}", "10"),
    ("7*7", "Let me think " + "\\boxed{" * 40000, "49"),
    ("8-5", "\\boxed{3}", "3"),
    ("4*4", "\\boxed{61}", "16"),
]


def extract_boxed(text):
    """Content of the last balanced \\boxed{...}; unbalanced openings are skipped."""
    answer = None
    for start in range(len(text)):
        if not text.startswith("\\boxed{", start):
            continue
        depth, i = 0, start + len("\\boxed")
        while i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            if depth == 0:
                answer = text[start + len("\\boxed{"):i]
                break
            i += 1
    return answer


def math_verify_reward(completion, reference):
    answer = extract_boxed(completion)
    return 1.0 if answer is not None and answer.strip() == reference else 0.0


class AsyncResult:
    def __init__(self, fn, *args):
        self._done = threading.Event()
        self._value = None
        threading.Thread(target=self._run, args=(fn, args), daemon=True).start()

    def _run(self, fn, args):
        self._value = fn(*args)
        self._done.set()

    def get(self, timeout=None):
        if not self._done.wait(timeout):
            raise TimeoutError("reward computation timed out")
        return self._value


def compute_rewards(rollouts):
    pending = [AsyncResult(math_verify_reward, completion, ref) for _, completion, ref in rollouts]
    return np.array([job.get() for job in pending], np.float32)


def main():
    mesh = Mesh(np.array(jax.devices()), ("dp",))
    rank, world = jax.process_index(), jax.process_count()
    per_rank = len(ROLLOUTS) // world
    mine = ROLLOUTS[rank * per_rank:(rank + 1) * per_rank]
    rewards = compute_rewards(mine)
    global_rewards = jax.make_array_from_process_local_data(NamedSharding(mesh, P("dp")), rewards)
    normalize = jax.jit(lambda r: (r - jnp.mean(r)) / (jnp.std(r) + 1e-6), out_shardings=NamedSharding(mesh, P()))
    advantages = normalize(global_rewards)
    print("RESULT mean_reward", float(np.asarray(multihost_utils.process_allgather(rewards)).mean()))
    print("RESULT advantages", np.round(np.asarray(advantages.addressable_shards[0].data), 4).tolist())


if __name__ == "__main__":
    main()
