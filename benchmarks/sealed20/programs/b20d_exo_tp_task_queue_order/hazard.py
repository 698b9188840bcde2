# Tensor-parallel inference runner (one per node). The API server forwards every new task to all
# runners; a task is only started once all runners agree they have it, and then each runner
# prefills it with its half of the weights, summing partial results across runners.
import os
import queue
import threading
import time
from dataclasses import dataclass
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

HIDDEN = 8
HOP_LATENCY_S = 0.2


@dataclass(frozen=True)
class Task:
    task_id: int
    prompt_len: int
    leader: int


INCOMING = [Task(task_id=101, prompt_len=5, leader=0), Task(task_id=102, prompt_len=9, leader=1)]

mesh = Mesh(np.array(jax.devices()), ("tp",))


@jax.jit
@partial(jax.shard_map, mesh=mesh, in_specs=(P(None, "tp"), P("tp", None)), out_specs=P())
def tp_prefill(x, w):
    return jax.lax.psum(x @ w, "tp")


class ApiServer:
    """Forwards each task along the ring of runners, starting at the task's placement leader."""

    def __init__(self, world):
        self.world = world

    def deliver(self, task, runner_rank, inbox):
        hops = (runner_rank - task.leader) % self.world
        time.sleep(hops * HOP_LATENCY_S)
        inbox.put(task)


class Runner:
    def __init__(self, rank, world):
        self.rank, self.world = rank, world
        self.inbox = queue.Queue()
        self._maybe_queue = []
        self._queue = []
        rng = np.random.default_rng(0)
        w_full = rng.normal(size=(HIDDEN, HIDDEN)).astype(np.float32)
        self.w_local = w_full[rank * HIDDEN // world:(rank + 1) * HIDDEN // world]

    def receive(self, expected):
        while len(self._maybe_queue) < expected:
            self._maybe_queue.append(self.inbox.get(timeout=5))

    def agree_on_tasks(self):
        local_ids = np.array([t.task_id for t in self._maybe_queue], dtype=np.int32)
        all_ids = np.asarray(multihost_utils.process_allgather(local_ids))
        agreed_ids = sorted(set.intersection(*(set(row.tolist()) for row in all_ids)))
        agreed = [t for t in sorted(self._maybe_queue, key=lambda t: t.task_id) if t.task_id in agreed_ids]
        self._queue.extend(task for task in self._maybe_queue if task in agreed)
        self._maybe_queue = [task for task in self._maybe_queue if task not in agreed]

    def embed(self, task):
        rng = np.random.default_rng(task.task_id)
        x = rng.normal(size=(task.prompt_len, HIDDEN)).astype(np.float32)
        return x[:, self.rank * HIDDEN // self.world:(self.rank + 1) * HIDDEN // self.world]

    def run_queue(self):
        x_sharding = NamedSharding(mesh, P(None, "tp"))
        w_sharding = NamedSharding(mesh, P("tp", None))
        w = jax.make_array_from_process_local_data(w_sharding, self.w_local)
        results = {}
        while self._queue:
            task = self._queue.pop(0)
            x = jax.make_array_from_process_local_data(x_sharding, self.embed(task))
            out = tp_prefill(x, w)
            results[task.task_id] = round(float(jnp.sum(out[-1])), 4)
        return results


def main():
    rank, world = jax.process_index(), jax.process_count()
    runner = Runner(rank, world)
    server = ApiServer(world)
    senders = [threading.Thread(target=server.deliver, args=(t, rank, runner.inbox)) for t in INCOMING]
    for s in senders:
        s.start()
    runner.receive(expected=len(INCOMING))
    for s in senders:
        s.join()
    print("arrival order", [t.task_id for t in runner._maybe_queue])
    runner.agree_on_tasks()
    results = runner.run_queue()
    for task_id in sorted(results):
        print("RESULT last_token_logit_sum", task_id, results[task_id])


if __name__ == "__main__":
    main()
