# MoE aux-loss tracker with MTP under pipeline parallelism: every stage sizes the tracker with the MTP slot
# Source: https://github.com/NVIDIA/Megatron-LM/pull/3401
# Written for the mcjax sealed16 evaluation (not copied); run as 2 processes by benchmarks/sealed16/run_pair.py.
import os
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TRACK_NAMES = ("load_balancing_loss", "z_loss")


@dataclass
class TransformerConfig:
    num_layers: int = 4
    mtp_num_layers: int = 1
    moe_layer_freq: tuple = (0, 0, 1, 1)     # first two layers dense, last two MoE
    pipeline_stages: int = 2


_TRACKER = {}


def save_to_aux_losses_tracker(name, loss, layer_number, num_layers):
    """Router side: the tracker row has one slot per decoder layer plus the MTP layers."""
    if name not in _TRACKER:
        _TRACKER[name] = {"values": np.zeros(num_layers, np.float32)}
    _TRACKER[name]["values"][layer_number] += loss


def track_moe_metrics(cfg, force_initialize=False):
    """Logging side: make sure every tracked name exists before the cross-stage reduction."""
    if force_initialize:
        for name in TRACK_NAMES:
            if name not in _TRACKER:
                _TRACKER[name] = {"values": np.zeros(cfg.num_layers + cfg.mtp_num_layers, np.float32)}


class PipelineStage:
    def __init__(self, cfg, stage):
        per_stage = cfg.num_layers // cfg.pipeline_stages
        self.cfg = cfg
        self.layers = list(range(stage * per_stage, (stage + 1) * per_stage))
        self.is_last = stage == cfg.pipeline_stages - 1

    def forward(self, tokens):
        total = self.cfg.num_layers + self.cfg.mtp_num_layers
        h = tokens
        for layer in self.layers:
            h = np.tanh(h + 0.1 * (layer + 1))
            if self.cfg.moe_layer_freq[layer]:
                probs = np.exp(h) / np.exp(h).sum()
                save_to_aux_losses_tracker("load_balancing_loss", float((probs ** 2).sum()), layer, total)
                save_to_aux_losses_tracker("z_loss", float(np.log(np.exp(h).sum()) ** 2), layer, total)
        if self.is_last and self.cfg.mtp_num_layers:
            save_to_aux_losses_tracker("load_balancing_loss", float(np.abs(h).mean()), self.cfg.num_layers, total)
        return h


def reduce_aux_losses_tracker_across_ranks(mesh):
    sharding = NamedSharding(mesh, P("pp"))
    reduce_pp = jax.jit(lambda x: jnp.sum(x, axis=0))
    out = {}
    for name in TRACK_NAMES:
        local = _TRACKER[name]["values"][None, :]
        out[name] = np.asarray(reduce_pp(jax.make_array_from_process_local_data(sharding, local)))
    return out


def main():
    cfg = TransformerConfig()
    mesh = Mesh(np.array(jax.devices()), ("pp",))
    stage = PipelineStage(cfg, jax.process_index())
    tokens = np.linspace(-1.0, 1.0, 6, dtype=np.float32)
    for it in range(2):
        stage.forward(tokens * (it + 1))
        track_moe_metrics(cfg, force_initialize=True)
        reduced = reduce_aux_losses_tracker_across_ranks(mesh)
        print(f"RESULT iter{it}", {k: [round(float(v), 4) for v in vals] for k, vals in reduced.items()})
        _TRACKER.clear()
    multihost_utils.sync_global_devices("training_log done")


if __name__ == "__main__":
    main()
