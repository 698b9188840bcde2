# MoE training metrics: aux-loss trackers are all-reduced over the pipeline group for every configured name, zeros if absent
# Source: https://github.com/NVIDIA-NeMo/RL/pull/3419
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = Mesh(np.array(jax.devices()), ("pp",))
STAGES = NamedSharding(MESH, P("pp"))
NUM_LAYERS, DIM = 4, 4


@dataclass
class MoEConfig:
    layer_types: tuple = ("moe", "moe", "dense", "dense")   # last stage: dense layers before the head
    load_balancing_type: str = "aux_loss"
    track_names: tuple = ("load_balancing_loss",)
    tracker: dict = field(default_factory=dict)


def save_to_aux_losses_tracker(cfg, name, loss, layer):
    if name not in cfg.tracker:
        cfg.tracker[name] = np.zeros(NUM_LAYERS, np.float32)
    cfg.tracker[name][layer] += loss


def all_reduce_pp(values):
    return multihost_utils.process_allgather(values).sum(axis=0)


def reduce_aux_losses_tracker_across_ranks(cfg):
    for name in cfg.track_names:               # the configured names, known to every stage
        values = cfg.tracker.get(name, np.zeros(NUM_LAYERS, np.float32))
        cfg.tracker[name] = all_reduce_pp(values)


def get_moe_metrics(cfg):
    reduce_aux_losses_tracker_across_ranks(cfg)
    metrics = {f"moe/{k}": float(v.sum()) for k, v in cfg.tracker.items()}
    cfg.tracker.clear()
    return metrics


@jax.jit
def stage_forward(w, x):
    return jnp.sum(jnp.tanh(w @ x))            # reduced over the pp-sharded stage weights


class PipelineStage:
    def __init__(self, cfg):
        self.cfg, self.rank = cfg, jax.process_index()
        per = NUM_LAYERS // jax.process_count()
        self.layers = list(range(self.rank * per, (self.rank + 1) * per))
        local = np.stack([np.eye(DIM, dtype=np.float32) * (1 + l) for l in self.layers]).reshape(-1, DIM)
        self.w = jax.make_array_from_process_local_data(STAGES, local)

    def train_step(self, step):
        x = jnp.ones((DIM,), jnp.float32) * 0.1 * (step + 1)
        loss = float(stage_forward(self.w, x))
        for layer in self.layers:
            if self.cfg.layer_types[layer] == "moe" and self.cfg.load_balancing_type == "aux_loss":
                probs = np.full(DIM, 1.0 / DIM) + 0.01 * layer
                save_to_aux_losses_tracker(self.cfg, "load_balancing_loss", float(DIM * probs @ probs), layer)
        return loss


def main():
    cfg = MoEConfig()
    stage = PipelineStage(cfg)
    for step in range(3):
        loss = stage.train_step(step)
        metrics = get_moe_metrics(cfg)
        if jax.process_index() == 0:
            print(f"step {step}: loss {loss:.4f} {metrics}")
    print("RESULT final_loss", round(loss, 4))
    print("RESULT moe_metrics", {k: round(v, 4) for k, v in metrics.items()})


if __name__ == "__main__":
    main()
