# Mozaik-style network model (JAX port): a "parallel safe" random generator, seeded identically on
# every process, builds the connections of the local neurons and later draws the stimulus protocol,
# which every process must agree on.
# Source: https://github.com/CSNG-MFF/mozaik/pull/92
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.sharding.Mesh(np.array(jax.devices()), ("cells",))
CELLS = NamedSharding(MESH, P("cells"))
REPLICATED = NamedSharding(MESH, P())


class Sheet:
    def __init__(self, name, n_neurons, model):
        self.name = name
        self.n_neurons = n_neurons
        self.model = model
        # neurons are distributed round-robin over processes
        self.local_ids = list(range(jax.process_index(), n_neurons, jax.process_count()))

    def build_connections(self, n_inputs=5):
        weights = {}
        # draw a seed for every neuron on every process so the shared generator stays in step
        seeds = self.model.rng.randint(0, 2**31 - 1, self.n_neurons)
        for nid in self.local_ids:
            conn_rng = np.random.RandomState(seeds[nid])
            weights[nid] = conn_rng.uniform(0.0, 0.2, n_inputs)
        return weights


class Model:
    def __init__(self, seed=513):
        self.rng = np.random.RandomState(seed)       # same seed everywhere ("parallel safe")
        self.sheets = [Sheet("V1_Exc", 7, self), Sheet("V1_Inh", 3, self)]
        self.weights = {s.name: s.build_connections() for s in self.sheets}

    def stimulus_protocol(self, n_stimuli=3):
        durations = self.rng.randint(3, 7, n_stimuli)
        contrasts = self.rng.uniform(0.2, 1.0, n_stimuli)
        return list(zip(durations.tolist(), contrasts.tolist()))


@jax.jit
def network_step(v, drive):
    v = 0.9 * v + drive
    spikes = (v > 1.0).astype(jnp.float32)
    return v * (1.0 - spikes), jnp.sum(spikes)       # population spike count: global reduction


def run_experiment(model):
    sheet = model.sheets[0]
    local_w = np.array([model.weights[sheet.name][n].sum() for n in sheet.local_ids] + [0.0],
                       np.float32)[: 4]
    v = jax.make_array_from_process_local_data(CELLS, np.zeros(4, np.float32))
    w = jax.make_array_from_process_local_data(CELLS, local_w)
    counts = []
    for duration, contrast in model.stimulus_protocol():
        total = 0.0
        for _ in range(duration):
            v, n = network_step(v, w * contrast * 4.0)
            total += float(n)
        counts.append(total)
    return counts


def main():
    model = Model()
    counts = run_experiment(model)
    print(f"RESULT protocol {[(d, round(c, 4)) for d, c in model.stimulus_protocol()]}")
    print(f"RESULT spike_counts {counts}")


if __name__ == "__main__":
    main()
