# Barrier names carry a process-local operation id; a save on a subset of processes (the primary only)
# advances the counter there alone, so the next all-process save waits at differently named barriers.
# Source: https://github.com/google/orbax/commit/b752899844093f17a033f700e10d2a0f2629ce72
# Written for the mcjax sealed5 evaluation (not copied); run as 2 processes by benchmarks/sealed5/run_pair.py.
import itertools
import os
import pickle
import tempfile

import jax
import jax.numpy as jnp
import numpy as np
from jax._src import distributed
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec as P

jax.distributed.initialize(os.environ["COORDINATOR_ADDRESS"], int(os.environ["NUM_PROCESSES"]),
                           int(os.environ["PROCESS_ID"]))

MESH = jax.make_mesh((jax.device_count(),), ("data",))
REPL = NamedSharding(MESH, P())
JOB = os.environ.get("JOB_ID", "local")


class OperationIdGenerator:
    _counter = itertools.count()
    _current = -1

    @classmethod
    def next_operation_id(cls):
        cls._current = next(cls._counter)
        return cls._current

    @classmethod
    def get_current_operation_id(cls):
        return cls._current


class MultiprocessingOptions:
    def __init__(self, primary_host=0, active_processes=None):
        self.primary_host = primary_host
        self.active_processes = active_processes or set(range(jax.process_count()))


class Checkpointer:
    def __init__(self, multiprocessing_options=None):
        self._options = multiprocessing_options or MultiprocessingOptions()

    def _sync(self, name):
        if len(self._options.active_processes) > 1:
            multihost_utils.sync_global_devices(name)

    def save(self, directory, state):
        if jax.process_index() not in self._options.active_processes:
            return
        op_id = OperationIdGenerator.next_operation_id()
        self._sync(f"Checkpointer:save_start:{op_id}")
        if jax.process_index() == self._options.primary_host:
            os.makedirs(directory, exist_ok=True)
            with open(os.path.join(directory, "state.pkl"), "wb") as f:
                pickle.dump(jax.tree.map(lambda a: np.asarray(a.addressable_data(0)), state), f)
        self._sync(f"Checkpointer:save_finalize:{op_id}")


class MultiProcessTest:
    def setUp(self):
        multihost_utils.sync_global_devices(f"ensure_all_processes_arrive_at_test_case_{self._testMethodName}")
        self.tmp = os.path.join(tempfile.gettempdir(), f"b5a_opid_{JOB}_{self._testMethodName}")

    def run(self, name):
        self._testMethodName = name
        self.setUp()
        return getattr(self, name)()


@jax.jit
def update(state):
    return {"w": state["w"] * 0.5 + 1.0}


class CheckpointerTest(MultiProcessTest):
    def test_save_on_primary_only(self):
        state = update(jax.device_put({"w": jnp.ones((2,))}, REPL))
        Checkpointer(MultiprocessingOptions(active_processes={0})).save(self.tmp, state)
        return float(jnp.sum(state["w"]))

    def test_save_all_processes(self):
        state = update(update(jax.device_put({"w": jnp.ones((2,))}, REPL)))
        Checkpointer().save(self.tmp, state)
        return float(jnp.sum(state["w"]))


suite = CheckpointerTest()
print("RESULT", [suite.run(name) for name in ("test_save_on_primary_only", "test_save_all_processes")])
