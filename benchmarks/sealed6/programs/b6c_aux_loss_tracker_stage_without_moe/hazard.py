# MoE aux-loss tracker reduced across pipeline stages: a stage with no MoE layers has an empty tracker and skips the reduce
# Source: https://github.com/NVIDIA/Megatron-LM/issues/1444 (port of reduce_aux_losses_tracker_across_ranks to JAX)
# Written for the mcjax sealed6 evaluation (not copied); run as 2 processes by benchmarks/sealed6/run_pair.py.
import dataclasses
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclasses.dataclass
class ModelConfig:
    num_layers: int = 8
    hidden: int = 6
    num_experts: int = 4
    moe_layer_freq: tuple = (0, 0, 0, 0, 1, 1, 1, 1)   # the first layers are dense
    aux_loss_coeff: float = 0.01


class AuxLossTracker:
    """Per-layer auxiliary losses, keyed by loss name, filled in by the MoE routers during forward."""

    def __init__(self, cfg: ModelConfig):
        self.cfg = cfg
        self.values = {}

    def record(self, name: str, layer: int, value: float):
        if name not in self.values:
            self.values[name] = np.zeros((self.cfg.num_layers,), np.float32)
        self.values[name][layer] += value


def reduce_aux_losses_tracker_across_ranks(tracker: AuxLossTracker):
    # each pipeline stage only filled in its own layers: sum them over the pipeline group
    for name in sorted(tracker.values):
        tracker.values[name] = multihost_utils.process_allgather(tracker.values[name]).sum(axis=0)


class PipelineStage:
    def __init__(self, cfg: ModelConfig, stage: int, num_stages: int):
        per_stage = cfg.num_layers // num_stages
        self.cfg, self.layers = cfg, range(stage * per_stage, (stage + 1) * per_stage)
        rng = np.random.default_rng(1234)
        self.weights = {i: rng.normal(size=(cfg.hidden, cfg.hidden)).astype(np.float32) * 0.3 for i in range(cfg.num_layers)}
        self.routers = {i: rng.normal(size=(cfg.hidden, cfg.num_experts)).astype(np.float32) for i in range(cfg.num_layers)}

    def forward(self, h: np.ndarray, tracker: AuxLossTracker) -> np.ndarray:
        for i in self.layers:
            if self.cfg.moe_layer_freq[i]:
                logits = h @ self.routers[i]
                probs = np.exp(logits - logits.max(axis=1, keepdims=True))
                probs /= probs.sum(axis=1, keepdims=True)
                load = np.bincount(probs.argmax(axis=1), minlength=self.cfg.num_experts) / len(h)
                tracker.record("load_balancing_loss", i, float(self.cfg.num_experts * np.sum(load * probs.mean(axis=0))))
            h = np.tanh(h @ self.weights[i])
        return h


def global_mean(mesh, local_value: float) -> float:
    arr = jax.make_array_from_process_local_data(NamedSharding(mesh, P("pp")), np.array([local_value], np.float32))
    return float(jax.jit(jnp.mean, out_shardings=NamedSharding(mesh, P()))(arr))


def main():
    cfg = ModelConfig()
    mesh = jax.make_mesh((jax.device_count(),), ("pp",))
    stage = PipelineStage(cfg, jax.process_index(), jax.process_count())
    rng = np.random.default_rng(5)
    for step in range(3):
        tracker = AuxLossTracker(cfg)
        h = stage.forward(rng.normal(size=(16, cfg.hidden)).astype(np.float32), tracker)
        reduce_aux_losses_tracker_across_ranks(tracker)
        aux = {k: round(float(v.sum()) * cfg.aux_loss_coeff, 5) for k, v in tracker.values.items()}
        act = global_mean(mesh, float(np.abs(h).mean()))
        print("RESULT step", step, "aux", aux.get("load_balancing_loss", 0.0), "act", round(act, 5))


if __name__ == "__main__":
    main()
