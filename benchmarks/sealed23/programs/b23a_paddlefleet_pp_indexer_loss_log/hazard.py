import os
from dataclasses import dataclass, field

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))


@dataclass
class TransformerConfig:
    num_layers: int = 4
    hidden_size: int = 8
    pipeline_model_parallel_size: int = 2
    # 0: dense attention, 4: CSA (compressed sparse attention with indexer), 128: HCA
    csa_compress_ratios: list = field(default_factory=lambda: [0, 0, 4, 128])
    dsa_indexer_loss_coeff: float = 0.01
    train_iters: int = 3


def pp_rank():
    return jax.process_index()


def all_reduce_pp(x):
    return np.asarray(multihost_utils.process_allgather(np.asarray(x, np.float32))).sum(0)


class DSAIndexerLossLoggingHelper:
    tracker = {}

    @staticmethod
    def save_loss_to_tracker(loss, layer_number, num_layers):
        tracker = DSAIndexerLossLoggingHelper.tracker
        if "values" not in tracker:
            tracker["values"] = np.zeros(num_layers, np.float32)
        tracker["values"][layer_number - 1] += float(loss)

    @staticmethod
    def reduce_loss_in_tracker():
        tracker = DSAIndexerLossLoggingHelper.tracker
        if "values" not in tracker:
            return
        tracker["values"] = all_reduce_pp(tracker["values"])

    @staticmethod
    def track_indexer_metrics(num_layers, total_loss_dict):
        DSAIndexerLossLoggingHelper.reduce_loss_in_tracker()
        values = DSAIndexerLossLoggingHelper.tracker.get("values", np.zeros(num_layers, np.float32))
        num_indexer_layers = max(int((values != 0).sum()), 1)
        total_loss_dict["indexer loss"] = float(values.sum()) / num_indexer_layers
        DSAIndexerLossLoggingHelper.tracker = {}


class TransformerLayer:
    def __init__(self, config, layer_number, key):
        self.config, self.layer_number = config, layer_number
        self.has_indexer = config.csa_compress_ratios[layer_number - 1] == 4
        self.w = jax.random.normal(key, (config.hidden_size, config.hidden_size)) * 0.1

    def forward(self, h):
        out = jnp.tanh(h @ self.w)
        if self.has_indexer and self.config.dsa_indexer_loss_coeff > 0:
            indexer_loss = self.config.dsa_indexer_loss_coeff * jnp.mean((out - h) ** 2)
            DSAIndexerLossLoggingHelper.save_loss_to_tracker(indexer_loss, self.layer_number,
                                                             self.config.num_layers)
        return out


class PipelineStage:
    def __init__(self, config):
        per_stage = config.num_layers // config.pipeline_model_parallel_size
        first = pp_rank() * per_stage + 1
        keys = jax.random.split(jax.random.PRNGKey(0), config.num_layers)
        self.layers = [TransformerLayer(config, n, keys[n - 1]) for n in range(first, first + per_stage)]

    def forward(self, h):
        for layer in self.layers:
            h = layer.forward(h)
        return h


def train_step(config, stage, it):
    rng = np.random.default_rng(it)
    h = jnp.asarray(rng.normal(size=(4, config.hidden_size)), jnp.float32)
    # send/recv between stages, modelled as a broadcast of the stage-0 activations
    h = stage.forward(h) if pp_rank() == 0 else h
    h = jnp.asarray(multihost_utils.broadcast_one_to_all(np.asarray(h), is_source=pp_rank() == 0))
    out = stage.forward(h) if pp_rank() == 1 else h
    lm_loss = float(jnp.mean(out ** 2)) if pp_rank() == 1 else 0.0
    return float(all_reduce_pp(lm_loss))


def main():
    config = TransformerConfig()
    stage = PipelineStage(config)
    for it in range(config.train_iters):
        total_loss_dict = {"lm loss": train_step(config, stage, it)}
        DSAIndexerLossLoggingHelper.track_indexer_metrics(config.num_layers, total_loss_dict)
        print(f"RESULT iteration {it + 1} lm loss {total_loss_dict['lm loss']:.5f} "
              f"indexer loss {total_loss_dict['indexer loss']:.6f}")


if __name__ == "__main__":
    main()
