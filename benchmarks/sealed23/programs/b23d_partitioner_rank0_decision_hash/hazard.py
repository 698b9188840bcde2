# FSDP-style training step compiled with an activation-memory budget, in the style of
# torch._functorch.partitioners.min_cut_rematerialization_partition: each rank chooses which
# forward values to save and which to recompute in the backward (re-running the parameter
# all-gather), using the size hints of its own first batch; when the joint graph contains
# collectives and is the same on every rank, rank 0's choice is broadcast to all ranks.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

WIDTH = 16
NUM_LAYERS = 3


@dataclass
class Node:
    name: str
    op: str
    memory: float
    runtime: float


def build_joint_graph(size_hint_tokens):
    nodes = [Node("primals_1", "placeholder", size_hint_tokens * WIDTH * 4, 0.0)]
    for i in range(1, NUM_LAYERS + 1):
        nodes.append(Node(f"all_gather_into_tensor_{i}", "_c10d_functional", WIDTH * WIDTH * 4, 40.0))
        nodes.append(Node(f"mm_{i}", "aten", size_hint_tokens * WIDTH * 4, size_hint_tokens * WIDTH * WIDTH / 64))
        nodes.append(Node(f"relu_{i}", "aten", size_hint_tokens * WIDTH * 4, size_hint_tokens / 8))
    return nodes


def choose_saved_values_set(joint_graph, memory_budget=0.4):
    candidates = [n for n in joint_graph if n.op != "placeholder"]
    max_memory = sum(n.memory for n in candidates)
    budget, saved = memory_budget * max_memory, []
    for node in sorted(candidates, key=lambda n: n.runtime / n.memory, reverse=True):
        if node.memory <= budget:
            saved.append(node)
            budget -= node.memory
    return [n for n in joint_graph if n in saved]


def _fingerprint(text):
    return np.frombuffer(hash(text).to_bytes(8, "little", signed=True), dtype=np.uint8)


def _broadcast_rank0_decision(joint_graph, saved_values):
    def has_collectives(graph):
        return any(n.op == "_c10d_functional" for n in graph)

    def has_same_nodes(graph):
        node_str = "/".join(n.name for n in graph)
        all_inputs = np.asarray(multihost_utils.process_allgather(_fingerprint(node_str)))
        return bool((all_inputs == all_inputs[0]).all())

    if jax.process_count() > 1 and has_collectives(joint_graph) and has_same_nodes(joint_graph):
        mask = np.array([n in saved_values for n in joint_graph], dtype=np.int32)
        mask = np.asarray(multihost_utils.broadcast_one_to_all(mask))
        saved_values = [n for n, keep in zip(joint_graph, mask) if keep]
    return saved_values


class FSDPTrainer:
    def __init__(self, rank, world, lr=0.1):
        rng = np.random.default_rng(3)
        full = rng.normal(size=(NUM_LAYERS, WIDTH, WIDTH)).astype(np.float32) / 4
        self.shards = [w[:, rank * WIDTH // world:(rank + 1) * WIDTH // world] for w in full]
        self.rank, self.world, self.lr = rank, world, lr
        self.saved_names = None
        self._loss_grad = jax.jit(jax.value_and_grad(self._loss, argnums=0))

    @staticmethod
    def _loss(weights, x):
        h = x
        for w in weights:
            h = jax.nn.relu(h @ w)
        return jnp.mean(h ** 2)

    def _all_gather_params(self, i):
        gathered = np.asarray(multihost_utils.process_allgather(self.shards[i]))
        return np.concatenate(list(gathered), axis=1)

    def compile(self, first_batch):
        graph = build_joint_graph(size_hint_tokens=first_batch.shape[0])
        saved = _broadcast_rank0_decision(graph, choose_saved_values_set(graph))
        self.saved_names = {n.name for n in saved}

    def step(self, x):
        weights = [self._all_gather_params(i) for i in range(NUM_LAYERS)]
        loss, grads = self._loss_grad(weights, x)
        for i in reversed(range(NUM_LAYERS)):
            if f"all_gather_into_tensor_{i + 1}" not in self.saved_names:
                weights[i] = self._all_gather_params(i)
            g = np.asarray(multihost_utils.process_allgather(np.asarray(grads[i]))).mean(0)
            cols = slice(self.rank * WIDTH // self.world, (self.rank + 1) * WIDTH // self.world)
            self.shards[i] = self.shards[i] - self.lr * g[:, cols]
        return float(np.asarray(multihost_utils.process_allgather(np.float32(loss))).mean())


def main():
    rank, world = jax.process_index(), jax.process_count()
    rng = np.random.default_rng(10 + rank)
    seq_lens = [48, 160] if rank == 0 else [320, 96]
    batches = [rng.normal(size=(n, WIDTH)).astype(np.float32) for n in seq_lens]
    trainer = FSDPTrainer(rank, world)
    trainer.compile(batches[0])
    losses = [trainer.step(b) for b in batches]
    print("RESULT saved_values", sorted(trainer.saved_names))
    print("RESULT losses", [round(l, 5) for l in losses])


if __name__ == "__main__":
    main()
