# Ghost-zone communication agrees on whether any domain has extra ghosts; then every processor takes the exchange
# Source: https://github.com/visit-dav/visit/issues/19988
# Written for the mcjax sealed13 evaluation (not copied); run as 2 processes by benchmarks/sealed13/run_pair.py.
import os

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

CFG = {"cells_per_domain": 6, "n_extra": 2, "variable": "Primal/Shared/edrate"}


class Domain:
    """One mesh domain as a database reader hands it to a processor."""

    def __init__(self, dom_id):
        rng = np.random.default_rng(100 + dom_id)
        self.dom_id = dom_id
        self.values = rng.uniform(0.0, 1.0, CFG["cells_per_domain"]).astype(np.float32)
        # The mili file stores extra ghost zones for the first domain only (written by a serial run).
        self.extra_ghost_zones = np.arange(CFG["n_extra"], dtype=np.int32) if dom_id == 0 else None


def exchange_boundaries(dom):
    """Every domain sends its two boundary cells; each takes its neighbours' as ghost values."""
    edges = multihost_utils.process_allgather(np.array([dom.values[0], dom.values[-1]], np.float32))
    left = edges[dom.dom_id - 1, 1] if dom.dom_id > 0 else dom.values[0]
    right = edges[dom.dom_id + 1, 0] if dom.dom_id + 1 < len(edges) else dom.values[-1]
    return np.concatenate([[left], dom.values, [right]]).astype(np.float32)


def exchange_scalar(dom, ids):
    """Ships the values of the listed extra ghost zones to every processor (an all-gather)."""
    payload = np.zeros(CFG["n_extra"], np.float32)
    if ids is not None:
        payload[: len(ids)] = dom.values[ids]
    return multihost_utils.process_allgather(payload)


def communicate_ghost_zones(dom):
    padded = exchange_boundaries(dom)
    extra = np.zeros(CFG["n_extra"], np.float32)
    has_extra = multihost_utils.process_allgather(np.int32(dom.extra_ghost_zones is not None))
    if int(np.max(has_extra)):
        gathered = exchange_scalar(dom, dom.extra_ghost_zones)
        extra = gathered.max(axis=0)
    return padded, extra


def pseudocolor_range(padded, extra):
    mesh = jax.make_mesh((jax.device_count(),), ("proc",))
    local = np.concatenate([padded, extra])[None, :]
    glob = jax.make_array_from_process_local_data(NamedSharding(mesh, P("proc")), local)
    lo_hi = jax.jit(lambda a: jnp.stack([jnp.min(a), jnp.max(a), jnp.mean(a)]),
                    out_shardings=NamedSharding(mesh, P()))(glob)
    return np.asarray(lo_hi)


def main():
    dom = Domain(jax.process_index())
    padded, extra = communicate_ghost_zones(dom)
    lo, hi, mean = pseudocolor_range(padded, extra)
    print("RESULT variable", CFG["variable"])
    print("RESULT range", round(float(lo), 5), round(float(hi), 5))
    print("RESULT mean", round(float(mean), 5))


main()
