# Optimizer parameter groups sorted on a key that omits the expert flag: tie order follows each stage's traversal
# Source: https://github.com/NVIDIA/Megatron-LM/pull/6616
# Written for the mcjax sealed3 evaluation (not copied); run as 2 processes by benchmarks/sealed3/run_pair.py.
import os
from dataclasses import dataclass

import jax
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

NUM_EXPERTS = 4


@dataclass
class Param:
    name: str
    value: np.ndarray
    is_expert_parallel: bool = False


def pipeline_stage_params(stage: int) -> list:
    """Parameters held by this pipeline stage, in the stage's module traversal order."""
    rng = np.random.default_rng(100)
    layers = {
        0: [Param("embedding.weight", rng.normal(size=(8, 4))),
            Param("layer0.mlp.experts.weight", rng.normal(size=(NUM_EXPERTS, 4, 4)), True),
            Param("layer0.attn.bias", rng.normal(size=(4,)))],
        1: [Param("layer1.mlp.experts.weight", rng.normal(size=(NUM_EXPERTS, 4, 4)), True),
            Param("layer1.attn.weight", rng.normal(size=(4, 4))),
            Param("final_norm.bias", rng.normal(size=(4,)))],
    }
    return layers[stage]


def get_param_groups(params: list) -> list:
    groups: dict = {}
    for p in params:
        wd_mult = 0.0 if p.name.endswith("bias") else 1.0
        lr_mult = 1.0
        groups.setdefault((wd_mult, lr_mult, p.is_expert_parallel), []).append(p)
    ordered = sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1]))
    return [{"wd_mult": k[0], "lr_mult": k[1], "is_expert_parallel": k[2], "params": v} for k, v in ordered]


class Optimizer:
    def __init__(self, group: dict, lr: float = 0.1):
        self.group, self.lr = group, lr

    def get_grad_stats(self, grads: dict) -> np.ndarray:
        """Squared norm (plus per-expert norms for expert groups), reduced over the group's ranks."""
        sq = sum(float((grads[p.name] ** 2).sum()) for p in self.group["params"])
        if self.group["is_expert_parallel"]:
            per_expert = sum((grads[p.name] ** 2).reshape(NUM_EXPERTS, -1).sum(1) for p in self.group["params"])
            local = np.concatenate([[sq], per_expert]).astype(np.float32)
        else:
            local = np.array([sq], np.float32)
        return np.asarray(multihost_utils.process_allgather(local)).sum(axis=0)

    def step(self, grads: dict, clip_coeff: float) -> None:
        for p in self.group["params"]:
            p.value -= self.lr * clip_coeff * (grads[p.name] + 0.01 * self.group["wd_mult"] * p.value)


class ChainedOptimizer:
    def __init__(self, param_groups: list):
        self.chained_optimizers = [Optimizer(g) for g in param_groups]

    def step(self, grads: dict, max_norm: float = 1.0) -> list:
        stats = [opt.get_grad_stats(grads) for opt in self.chained_optimizers]
        total_norm = float(np.sqrt(sum(s[0] for s in stats)))
        clip_coeff = min(1.0, max_norm / (total_norm + 1e-6))
        for opt in self.chained_optimizers:
            opt.step(grads, clip_coeff)
        return [round(float(s[0]), 4) for s in stats]


params = pipeline_stage_params(jax.process_index())
optimizer = ChainedOptimizer(get_param_groups(params))
for it in range(2):
    grads = {p.name: np.tanh(p.value) for p in params}
    group_sq_norms = optimizer.step(grads)
print("RESULT group_sq_norms", group_sq_norms)
print("RESULT groups", [(g["wd_mult"], g["is_expert_parallel"]) for g in get_param_groups(params)])
