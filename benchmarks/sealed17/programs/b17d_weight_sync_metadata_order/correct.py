# RL weight sync trainer -> inference engine: metadata and the streamed weights follow the same bucketed order
# Source: https://github.com/NovaSky-AI/SkyRL/pull/1581
# Written for the mcjax sealed17 evaluation (not copied); run as 2 processes by benchmarks/sealed17/run_pair.py.
import os
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import jax
from jax.experimental import multihost_utils

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

TRAINER_RANK = 0


@dataclass
class ModelConfig:
    hidden: int = 4
    vocab: int = 8
    num_layers: int = 2
    num_experts: int = 2
    enable_bucketing: bool = True


def build_params(cfg, fill):
    p = OrderedDict()
    p["embed"] = np.zeros((cfg.vocab, cfg.hidden), np.float32)
    for i in range(cfg.num_layers):
        p[f"layers.{i}.attn"] = np.zeros((cfg.hidden, cfg.hidden), np.float32)
        p[f"layers.{i}.experts"] = np.zeros((cfg.num_experts, cfg.hidden, cfg.hidden), np.float32)
    p["lm_head"] = np.zeros((cfg.hidden, cfg.vocab), np.float32)
    if fill:
        for k, (name, v) in enumerate(p.items()):
            p[name] = (np.arange(v.size, dtype=np.float32).reshape(v.shape) + k) / 100.0
    return p


class WeightExtractor:
    def __init__(self, cfg, params):
        self.cfg = cfg
        self.params = params

    def _bucketed_names(self):
        names = list(self.params)
        if not self.cfg.enable_bucketing:
            return names
        # expert weights go out in their own (EP-sharded) bucket after the dense bucket
        dense = [n for n in names if "experts" not in n]
        experts = [n for n in names if "experts" in n]
        return dense + experts

    def extract_weights(self):
        for name in self._bucketed_names():
            yield name, self.params[name]

    def get_weight_metadata(self):
        names = self._bucketed_names()
        return [(n, self.params[n].shape, str(self.params[n].dtype)) for n in names]


def sync_weights(cfg, rank):
    extractor = WeightExtractor(cfg, build_params(cfg, fill=(rank == TRAINER_RANK)))
    received = OrderedDict()
    if rank == TRAINER_RANK:
        for name, w in extractor.extract_weights():
            received[name] = np.asarray(multihost_utils.broadcast_one_to_all(w))
    else:
        # the inference engine allocates its receive buffers from the metadata it was sent
        for name, shape, dtype in extractor.get_weight_metadata():
            buf = np.empty(shape, dtype)
            received[name] = np.asarray(multihost_utils.broadcast_one_to_all(buf))
    return received


def main():
    cfg = ModelConfig()
    weights = sync_weights(cfg, jax.process_index())
    multihost_utils.sync_global_devices("weights loaded")
    for name in sorted(weights):
        print("RESULT", name, list(weights[name].shape), round(float(weights[name].sum()), 3))


if __name__ == "__main__":
    main()
