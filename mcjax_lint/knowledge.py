"""Built-in knowledge: which library calls are sources, sanitizers and collective work.

Names are fully qualified dotted names as resolved through the file's imports
(`import jax.numpy as jnp; jnp.zeros` -> `jax.numpy.zeros`). Users extend these tables through
`AnalysisSettings` (dotted names, trailing `.*` for a whole prefix).
"""

from __future__ import annotations

import functools
import re

# --- Process-dependent sources: calls whose value differs between processes. -----------------
PROCESS_DEPENDENT_CALLS: dict[str, str] = {
    "jax.process_index": "`jax.process_index()`",
    "jax.host_id": "`jax.host_id()`",
    "jax.distributed.global_state.process_id": "`jax.distributed` process id",
    "socket.gethostname": "`socket.gethostname()`",
    "socket.getfqdn": "`socket.getfqdn()`",
    "platform.node": "`platform.node()`",
    "os.uname": "`os.uname()`",
    "os.getpid": "`os.getpid()`",
    "os.getppid": "`os.getppid()`",
    "time.time": "the wall clock (`time.time()`)",
    "time.time_ns": "the wall clock (`time.time_ns()`)",
    "time.perf_counter": "the clock (`time.perf_counter()`)",
    "time.perf_counter_ns": "the clock (`time.perf_counter_ns()`)",
    "time.monotonic": "the clock (`time.monotonic()`)",
    "time.monotonic_ns": "the clock (`time.monotonic_ns()`)",
    "time.process_time": "the clock (`time.process_time()`)",
    "timeit.default_timer": "the clock (`timeit.default_timer()`)",
    "datetime.datetime.now": "the wall clock (`datetime.now()`)",
    "datetime.datetime.utcnow": "the wall clock (`datetime.utcnow()`)",
    "datetime.datetime.today": "the wall clock (`datetime.today()`)",
    "datetime.date.today": "the wall clock (`date.today()`)",
    "uuid.uuid1": "`uuid.uuid1()`",
    "uuid.uuid4": "`uuid.uuid4()`",
    "os.urandom": "`os.urandom()`",
    "random.random": "unseeded `random.random()`",
    "random.randint": "unseeded `random.randint()`",
    "random.randrange": "unseeded `random.randrange()`",
    "random.uniform": "unseeded `random.uniform()`",
    "random.choice": "unseeded `random.choice()`",
    "random.sample": "unseeded `random.sample()`",
    "random.choices": "unseeded `random.choices()`",
    "random.getrandbits": "unseeded `random.getrandbits()`",
    "numpy.random.rand": "unseeded `np.random.rand()`",
    "numpy.random.randn": "unseeded `np.random.randn()`",
    "numpy.random.randint": "unseeded `np.random.randint()`",
    "numpy.random.random": "unseeded `np.random.random()`",
    "numpy.random.uniform": "unseeded `np.random.uniform()`",
    "numpy.random.normal": "unseeded `np.random.normal()`",
    "numpy.random.choice": "unseeded `np.random.choice()`",
    "numpy.random.permutation": "unseeded `np.random.permutation()`",
    # A fresh temporary file or directory has a random name on each process (`tmpXXXXXXXX`): a
    # path made from it names a different place on each, even on a shared filesystem.
    "tempfile.mkdtemp": "a per-process temporary directory (`tempfile.mkdtemp()`)",
    "tempfile.mkstemp": "a per-process temporary file (`tempfile.mkstemp()`)",
    "tempfile.mktemp": "a per-process temporary name (`tempfile.mktemp()`)",
    "tempfile.TemporaryDirectory": "a per-process temporary directory (`tempfile.TemporaryDirectory()`)",
    "tempfile.NamedTemporaryFile": "a per-process temporary file (`tempfile.NamedTemporaryFile()`)",
    # Data sharded by process: what comes out of them is process-local.
    "tensorflow_datasets.split_for_jax_process": "a per-process split (`tfds.split_for_jax_process()`)",
    "grain.python.ShardByJaxProcess": "a per-process shard (`grain.ShardByJaxProcess()`)",
    "grain.ShardByJaxProcess": "a per-process shard (`grain.ShardByJaxProcess()`)",
    "grain.sharding.ShardByJaxProcess": "a per-process shard (`grain.ShardByJaxProcess()`)",
}
# Calls that create a directory, by the position of its path (MCJ106); and `.mkdir()` on a path.
DIRECTORY_CREATORS: dict[str, int] = {
    "os.makedirs": 0, "os.mkdir": 0, "tensorflow.io.gfile.makedirs": 0, "tensorflow.io.gfile.mkdir": 0,
}
# Calls that write a file, by the position of the path written (MCJ106); `open()` in a writing
# mode and `.write_text()` / `.write_bytes()` on a path too.
FILE_WRITERS: dict[str, int] = {
    "numpy.save": 0, "numpy.savez": 0, "numpy.savez_compressed": 0, "numpy.savetxt": 0,
    "shutil.copy": 1, "shutil.copy2": 1, "shutil.copyfile": 1, "shutil.move": 1, "shutil.copytree": 1,
    "torch.save": 1, "pickle.dump": 1,
}
# Time functions that read the clock when the time is not given: how many arguments they take
# before it (`time.strftime("%H%M")` formats now; `time.strftime("%H%M", t)` formats t).
CLOCK_UNLESS_TIME_GIVEN: dict[str, int] = {
    "time.strftime": 1, "time.localtime": 0, "time.gmtime": 0, "time.ctime": 0, "time.asctime": 0,
}
# What each of them is (analysis/kinds.py), by name or prefix: the first that matches.
PROCESS_DEPENDENT_KINDS: tuple[tuple[str, str], ...] = (
    ("jax.", "process-id"),
    ("socket.", "host-id"), ("platform.", "host-id"), ("os.uname", "host-id"), ("os.getpid", "host-id"),
    ("os.getppid", "host-id"),
    ("time.", "clock"), ("datetime.", "clock"), ("timeit.", "clock"),
    ("uuid.", "random"), ("tempfile.", "random"), ("os.urandom", "random"), ("random.", "random"), ("numpy.random.", "random"),
    ("secrets.", "random"),
    ("tensorflow_datasets.", "local-data"), ("grain.", "local-data"),
)
# Of those, the ones that give a process the same value each time it asks (who it is, not when):
# two calls are one value (a check under `if jax.process_index() == 0:` on what another
# `jax.process_index() == 0` block made is decided by the same fact).
PROCESS_IDENTITY_CALLS = frozenset({"jax.process_index", "jax.host_id", "jax.distributed.global_state.process_id",
                                    "socket.gethostname", "socket.getfqdn", "platform.node", "os.uname",
                                    "os.getpid", "os.getppid"})
PROCESS_IDENTITY_DESCS = frozenset(PROCESS_DEPENDENT_CALLS[q] for q in PROCESS_IDENTITY_CALLS)
# Of those, the ones that make a fresh temporary file or directory: a name that differs by
# process, never an empty one (`tmpXXXXXXXX`): whether a path made from it is empty (`if path:`)
# is the same on every process.
TEMP_NAME_DESCS = frozenset(d for q, d in PROCESS_DEPENDENT_CALLS.items() if q.startswith("tempfile."))
# Calls that give one process the same value each time it makes them with the same arguments
# (who it is, how many there are, lengths and type checks): a condition made of them and of
# variables nothing changed has the same value when evaluated again (MCJ101's paired `if`s).
# Not the clock, the filesystem (`os.path.exists`), randomness or a method of an object.
STABLE_CALLS = PROCESS_IDENTITY_CALLS | frozenset({
    "jax.process_count", "jax.host_count", "jax.device_count", "jax.local_device_count",
    "os.getenv", "os.environ.get", "len", "isinstance", "issubclass", "hasattr", "callable", "bool", "int",
    "float", "str", "abs", "min", "max", "any", "all", "type", "id",
})
# Calls that never change the objects passed to them (a variable passed to anything else may be
# mutated there: `reset(state)`).
NON_MUTATING_CALLS = STABLE_CALLS | frozenset({
    "print", "repr", "format", "sorted", "list", "tuple", "set", "frozenset", "dict", "sum", "round",
    "enumerate", "zip", "range", "reversed", "iter", "hash",
})
# Random draws given a size: where the size goes (its positional index; -1: the dimensions are the
# positional arguments, `np.random.rand(3, 4)`). Given one, the draw's values differ by process
# but its shape is the size's: process-local content, not a process-dependent shape or count.
SIZED_DRAWS: dict[str, int] = {
    "numpy.random.rand": -1, "numpy.random.randn": -1, "numpy.random.randint": 2, "numpy.random.random": 0,
    "numpy.random.uniform": 2, "numpy.random.normal": 2, "numpy.random.choice": 1,
    "numpy.random.permutation": 0, "random.sample": 1, "random.choices": 3,
}
SIZED_DRAW_KEYWORDS = {"random.sample": "k", "random.choices": "k"}
# Iterators that never end (`itertools.repeat` only without its count: `semantics.endless_call`),
# and the dataset method that repeats forever when given no count (`semantics.endless_repeat`).
ENDLESS_ITERATORS = frozenset({"itertools.count"})
CYCLING_ITERATORS = frozenset({"itertools.cycle"})  # endless unless what they cycle through is empty
ENDLESS_REPEAT_METHODS = frozenset({"repeat"})  # the size's keyword where it is not `size`
# jax.random: a key decides a draw's values, never its shape (the shape is a shape argument's, or
# the key's own). Functions of `jax.random` whose every argument is such content (a seed, the data
# folded in); of the others only the key (position 0, `key=`) is.
JAX_RANDOM_PREFIX = "jax.random."
JAX_RANDOM_ALL_CONTENT = frozenset({"jax.random.PRNGKey", "jax.random.key", "jax.random.fold_in",
                                    "jax.random.key_data", "jax.random.wrap_key_data", "jax.random.clone"})
# Calls that give back the elements of their first argument, in its order (a progress bar, a copy,
# an iterator over it): `tqdm(xs) if rank == 0 else xs` runs the same steps on every process.
SAME_ELEMENTS_WRAPPERS = frozenset({"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.std.tqdm", "tqdm.notebook.tqdm",
                                    "tqdm.rich.tqdm", "list", "tuple", "iter"})
PROCESS_DEPENDENT_PREFIXES: dict[str, str] = {
    "secrets.": "`secrets`",
}
# pytest fixtures (runtime_guard's plugin) whose value differs between processes: a parameter of
# this name of a test function or fixture is a source, as the call the fixture returns would be.
# (`mcjax_process_count` is the same on every process.)
PROCESS_DEPENDENT_FIXTURES: dict[str, str] = {
    "mcjax_process_index": "the `mcjax_process_index` fixture (`jax.process_index()`)",
}
# Decorators that make a function a pytest fixture (pytest fills its parameters with fixtures).
PYTEST_FIXTURE_DECORATORS = frozenset({"pytest.fixture", "pytest_asyncio.fixture"})
# Calls that are sources only when called without a seed argument.
# (`np.random.SeedSequence()` without entropy reads the OS's: its `.entropy` and what it seeds differ.)
UNSEEDED_RNG_CONSTRUCTORS = {"numpy.random.default_rng", "numpy.random.RandomState", "random.Random",
                             "numpy.random.SeedSequence"}
# Calls that make a stateful random generator object, seeded or not: each draw from it advances
# its state, so processes that draw different amounts from one seeded generator leave step.
RNG_CONSTRUCTORS = {"numpy.random.default_rng", "numpy.random.RandomState", "random.Random", "numpy.random.Generator"}
# Methods of such a generator that draw from it (numpy `Generator`/`RandomState`, `random.Random`),
# each with where its size is given: (position, keyword); -1 every positional argument (`rand(3,
# 4)`), None no size (one draw, or as many as its argument has elements: `shuffle(xs)`).
RNG_DRAW_METHODS: dict[str, tuple[int | None, str]] = {
    "random": (0, "size"), "random_sample": (0, "size"), "standard_normal": (0, "size"),
    "normal": (2, "size"), "uniform": (2, "size"), "integers": (2, "size"), "randint": (2, "size"),
    "choice": (1, "size"), "binomial": (2, "size"), "poisson": (1, "size"), "exponential": (1, "size"),
    "beta": (2, "size"), "gamma": (2, "size"), "rand": (-1, ""), "randn": (-1, ""),
    "permutation": (None, ""), "shuffle": (None, ""), "bytes": (0, "length"),
    "sample": (1, "k"), "choices": (3, "k"), "gauss": (None, ""), "randrange": (None, ""),
    "getrandbits": (0, "k"),
}

# Environment reads are process-dependent only for per-process variables: the launcher sets the
# rest identically everywhere (flagging every `os.environ.get("DEBUG")` would be noise).
ENV_READ_CALLS = {"os.environ.get", "os.getenv", "os.environ.__getitem__", "os.environ.pop"}
# Variables launchers set per process or per host (torchrun, Slurm, Open MPI/PMI, Horovod, Kubernetes
# indexed jobs and pods, Cloud TPU, this project's test harness): reading one is certainly
# process-dependent. docs/rules/README.md lists them.
PER_PROCESS_ENV_KEYS = frozenset({
    "RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK", "PROCESS_ID", "HOSTNAME",
    "SLURM_PROCID", "SLURM_LOCALID", "SLURM_NODEID",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_NODE_RANK", "PMI_RANK", "PMIX_RANK",
    "HOROVOD_RANK", "HOROVOD_LOCAL_RANK", "JOB_COMPLETION_INDEX", "POD_NAME",
    "CLOUD_TPU_TASK_ID", "TPU_WORKER_ID", "MEGASCALE_SLICE_ID", "CUDA_VISIBLE_DEVICES", "TF_CONFIG",
})
# Other names that look per-process (a rank, an id, a host in the name), and computed names: a
# guess. Most variables are set by the launcher for the whole job, alike on every host; these can
# differ, but a job-wide setting (`..._PER_HOST` toggles, `WORKER_ID_PREFIX`) is as likely.
_PER_PROCESS_ENV = re.compile(
    r"RANK|PROC_?ID|PROCESS_(ID|INDEX)|TASK_(ID|INDEX)|WORKER_(ID|INDEX)|NODE_?(ID|RANK|INDEX)|"
    r"HOST(NAME)?\b|HOST_NAME|POD_NAME|ORDINAL|SLICE_ID|CUDA_VISIBLE_DEVICES|COMPLETION_INDEX|"
    r"^PMI_|OMPI_COMM_WORLD|SLURM_(PROCID|LOCALID|NODEID)|LOCAL_",
    re.IGNORECASE,
)
ENV_GUESS = "guess"
GUESSED_ENV_DESC = "environment variable, possibly per-process,"


def env_key_kind(key: str | None) -> bool | str:
    """How reading environment variable `key` differs between processes: True for a variable
    launchers set per process (`PER_PROCESS_ENV_KEYS`); `ENV_GUESS` for a computed name (None) or
    one that looks per-process; False for the rest (the same everywhere)."""
    if key in PER_PROCESS_ENV_KEYS:
        return True
    return ENV_GUESS if key is None or _PER_PROCESS_ENV.search(key) else False


def is_per_process_env_key(key: str | None) -> bool:
    """True for environment variables that may differ by process (or an unknown, computed key)."""
    return bool(env_key_kind(key))


def env_desc(key: str | None, quote: str = "`", key_per_process: bool = False) -> str:
    """How a finding names reading environment variable `key` (a guess's description says so).
    A name computed from a per-process value (`f"READY_{os.getpid()}"`) is certain: each process
    reads another variable."""
    head = "environment variable" if key_per_process or env_key_kind(key) is True else GUESSED_ENV_DESC
    return f"{head} {quote}{key or '(computed)'}{quote}"


# --- Sanitizers: results agree across processes again. ------------------------------------------
SANITIZERS = {
    "jax.experimental.multihost_utils.broadcast_one_to_all",
    "jax.experimental.multihost_utils.process_allgather",
    "jax.lax.psum",
    "jax.lax.pmean",
    "jax.lax.pmax",
    "jax.lax.pmin",
    "jax.lax.all_gather",
    "jax.lax.psum_scatter",
}

# mpi4py's collectives that end with one value on every rank of the communicator: a broadcast
# from one root, an all-reduce, an all-gather. By method name (a communicator is rarely seen made:
# `comm = MPI.COMM_WORLD` at module level, passed in, an attribute); each rank must call them (a
# rank that skips one leaves the others waiting in it, as in a JAX collective). The lower-case
# (pickled object) forms return the value; the buffer forms write it into their receive buffer,
# given here by (position, keyword). Not `reduce`/`gather` (the root alone gets the result, the
# others None), `scatter`/`alltoall` (each rank gets its own part) nor the non-blocking `I...` forms
# (the buffer is filled only at `Wait`).
MPI_AGREEING_RESULT_METHODS = frozenset({"bcast", "allreduce", "allgather"})
MPI_AGREEING_BUFFER_METHODS: dict[str, tuple[int, str]] = {
    "Bcast": (0, "buf"), "Allreduce": (1, "recvbuf"), "Allgather": (1, "recvbuf"), "Allgatherv": (1, "recvbuf"),
}

# Methods whose result agrees across processes: the coordination service's blocking get returns
# what one process set (the key-value "broadcast" orbax and others use); mpi4py's agreeing
# collectives.
SANITIZER_METHODS = {"blocking_key_value_get", "blocking_key_value_get_bytes"} | MPI_AGREEING_RESULT_METHODS

# Conversions that keep what a value is on every process: of an agreed value (a sanitizer's
# result), the converted value agrees too (`int(broadcast_one_to_all(x))`); so do a constant
# element of it (`process_allgather(x)[0]`, `semantics.ev_Subscript`) and these methods of it.
AGREED_CONVERSIONS = frozenset({"int", "float", "bool", "str", "numpy.asarray", "numpy.array", "jax.device_get"})
AGREED_CONVERSION_METHODS = frozenset({"item", "tolist"})

# --- Collective work. ------------------------------------------------------------------------------
COLLECTIVE_CALLS: dict[str, str] = {
    "jax.experimental.multihost_utils.sync_global_devices": "`multihost_utils.sync_global_devices()`",
    "jax.experimental.multihost_utils.process_allgather": "`multihost_utils.process_allgather()`",
    "jax.experimental.multihost_utils.broadcast_one_to_all": "`multihost_utils.broadcast_one_to_all()`",
    "jax.experimental.multihost_utils.assert_equal": "`multihost_utils.assert_equal()`",
    "jax.experimental.multihost_utils.host_local_array_to_global_array": "`multihost_utils.host_local_array_to_global_array()`",
    "jax.experimental.multihost_utils.global_array_to_host_local_array": "`multihost_utils.global_array_to_host_local_array()`",
    "jax.experimental.multihost_utils.reached_preemption_sync_point": "`multihost_utils.reached_preemption_sync_point()`",
    "jax.make_array_from_callback": "`jax.make_array_from_callback()`",
    "jax.make_array_from_single_device_arrays": "`jax.make_array_from_single_device_arrays()`",
    "jax.make_array_from_process_local_data": "`jax.make_array_from_process_local_data()`",
    "jax.lax.psum": "`lax.psum()`",
    "jax.lax.pmean": "`lax.pmean()`",
    "jax.lax.pmax": "`lax.pmax()`",
    "jax.lax.pmin": "`lax.pmin()`",
    "jax.lax.all_gather": "`lax.all_gather()`",
    "jax.lax.all_to_all": "`lax.all_to_all()`",
    "jax.lax.ppermute": "`lax.ppermute()`",
    "jax.lax.psum_scatter": "`lax.psum_scatter()`",
    "jax.lax.pshuffle": "`lax.pshuffle()`",
    "jax.distributed.shutdown": "`jax.distributed.shutdown()`",
    "flax.training.checkpoints.save_checkpoint_multiprocess": "`flax checkpoints.save_checkpoint_multiprocess()`",
}
# Keywords that restrict collective work to a subset of processes (`active_processes=` of orbax's
# MultiprocessingOptions, `processes=`/`process_ids=` of barriers): such work is collective only
# among the processes that take that branch by design, not across the whole job.
SUBGROUP_KWARGS = {"active_processes", "process_ids", "processes"}

# Methods that synchronize whatever the receiver (coordination-service barriers).
COLLECTIVE_METHOD_NAMES = {"wait_at_barrier", "sync_global_devices"}
# The argument that names a barrier, by callee (a qualified name, or a method name): every process
# must pass the same name (`sync_global_devices` compares a hash of it and fails on a mismatch; a
# `wait_at_barrier` id another process never reaches times out).
BARRIER_NAME_ARGS: dict[str, tuple[int, str]] = {
    "jax.experimental.multihost_utils.sync_global_devices": (0, "name"),
    "sync_global_devices": (0, "name"),
    "wait_at_barrier": (0, "barrier_id"),
}

# Calls that return a collective callable: applying the result is collective work.
# Copy a pytree onto this process's own devices (one copy per local device): the result is the
# same kind of object (a project class stays that class) holding process-local arrays.
LOCAL_REPLICATORS = frozenset({"flax.jax_utils.replicate", "jax.device_put_replicated"})
JIT_WRAPPERS: dict[str, str] = {
    "jax.jit": "jit",
    "jax.pmap": "pmap",
    "jax.pjit": "pjit",
    "jax.experimental.pjit.pjit": "pjit",
    "jax.shard_map": "shard_map",
    "jax.experimental.shard_map.shard_map": "shard_map",
    "jax.experimental.maps.xmap": "xmap",
    "flax.nnx.jit": "nnx.jit",
    "flax.nnx.pmap": "nnx.pmap",
    "flax.nnx.shard_map": "nnx.shard_map",
    "equinox.filter_jit": "filter_jit",
    "equinox.filter_pmap": "filter_pmap",
}
# Methods of a jitted function that return something still collective to call.
JIT_STAGING_METHODS = {"lower", "compile"}

# Values that are global jax.Arrays: operations on them are collective work.
GLOBAL_ARRAY_CONSTRUCTORS = {
    "jax.make_array_from_callback",
    "jax.make_array_from_single_device_arrays",
    "jax.make_array_from_process_local_data",
    "jax.experimental.multihost_utils.host_local_array_to_global_array",
}
# Array namespaces whose calls are collective when an operand is a global array.
ARRAY_OP_PREFIXES = ("jax.numpy.", "jax.lax.", "jax.nn.", "jax.scipy.")
# Not collective: `jax.device_get`/`np.asarray` of a global array only read this process's
# addressable shards (a non-addressable array raises instead of hanging); rank-0 code fetching a
# replicated metric is the common, correct case.

# jax.Array members that give this process's part of an array: the shards on its own devices.
# Of a global array sharded over processes, each process gets other data (process-local content,
# of the same shape everywhere when the sharding is even); of a replicated one, the same data.
LOCAL_SHARD_ATTRIBUTES = frozenset({"addressable_shards"})
LOCAL_SHARD_METHODS = frozenset({"addressable_data"})

# Sharding constructors (device_put to one of these is collective when multi-process).
SHARDING_CONSTRUCTORS = {
    "jax.sharding.NamedSharding",
    "jax.sharding.PositionalSharding",
    "jax.sharding.GSPMDSharding",
    "jax.sharding.PmapSharding",
    "jax.NamedSharding",
}
DEVICE_PUT = "jax.device_put"
# A sharding of exactly one device (`SingleDeviceSharding(jax.local_devices()[0])`): data placed
# there, or an array built on it, lives on that device alone (a single-device array, one
# process's own): no cross-process work, no agreement needed, whatever the variable is called.
ONE_DEVICE_SHARDINGS = frozenset({"jax.sharding.SingleDeviceSharding"})
# Global-array constructors by where their sharding argument is (position, keyword): given a
# one-device sharding they build a single-device array instead.
ONE_DEVICE_ARRAY_CONSTRUCTORS: dict[str, tuple[int, str]] = {
    "jax.make_array_from_callback": (1, "sharding"),
    "jax.make_array_from_single_device_arrays": (1, "sharding"),
    "jax.make_array_from_process_local_data": (0, "sharding"),
}

# Checkpointing: constructors whose objects' save/restore/... are collective.
CHECKPOINTER_PREFIXES = ("orbax.checkpoint.",)
CHECKPOINTER_CLASS_SUFFIXES = ("CheckpointManager", "Checkpointer")
# `mngr.save(step, args=ocp.args.StandardSave(state))`: orbax argument objects mark a checkpointer.
ORBAX_ARGS_PREFIXES = ("orbax.checkpoint.args.", "orbax.checkpoint.checkpoint_args.")
# (Not `reload()`: orbax's re-reads the step list from the directory, with no sync; its own p2p
# benchmark calls it on process 0 alone.)
CHECKPOINTER_COLLECTIVE_METHODS = {"save", "restore", "wait_until_finished", "close", "delete"}
# orbax checkpointers that save synchronously (their `save` returns when the checkpoint is
# written and finalized), and a `CheckpointManager` given only such ones (the legacy
# `checkpointers=` argument) or `enable_async_checkpointing=False`: no save is left pending, so
# waiting for pending saves (`PENDING_SAVE_METHODS`) is no cross-process work. (`AsyncCheckpointer`
# and `StandardCheckpointer`, and a manager's default since orbax 0.5, save in the background:
# their wait joins a finalize step and a barrier.)
SYNC_CHECKPOINTERS = frozenset({"orbax.checkpoint.Checkpointer", "orbax.checkpoint.PyTreeCheckpointer",
                                "orbax.checkpoint.checkpointer.Checkpointer",
                                "orbax.checkpoint.pytree_checkpointer.PyTreeCheckpointer"})
CHECKPOINT_MANAGERS = frozenset({"orbax.checkpoint.CheckpointManager",
                                 "orbax.checkpoint.checkpoint_manager.CheckpointManager"})
PENDING_SAVE_METHODS = frozenset({"wait_until_finished"})

# --- Nondeterministic order. ------------------------------------------------------------------------
FS_LISTING_CALLS: dict[str, str] = {
    "os.listdir": "`os.listdir()`",
    "os.scandir": "`os.scandir()`",
    "os.walk": "`os.walk()`",
    "glob.glob": "`glob.glob()`",
    "glob.iglob": "`glob.iglob()`",
    "tensorflow.io.gfile.listdir": "`tf.io.gfile.listdir()`",
    "tensorflow.io.gfile.glob": "`tf.io.gfile.glob()`",
    "tensorflow.io.gfile.walk": "`tf.io.gfile.walk()`",
}
# Path-like methods that list a directory in filesystem order (pathlib, etils.epath, fsspec).
FS_LISTING_METHODS = {"glob", "rglob", "iterdir", "listdir", "scandir"}
# Builtins that consume an iterable without depending on its order.
ORDER_INSENSITIVE = {"sorted", "len", "min", "max", "any", "all", "set", "frozenset", "sum", "bool", "heapq.nsmallest", "heapq.nlargest",
                     # (values in ascending order)
                     "numpy.sort", "numpy.unique", "jax.numpy.sort", "jax.numpy.unique"}
# Keywords that make an order-free call return something in its input's order too
# (`np.unique(x, return_inverse=True)`: one label per input element; `return_index`: which
# occurrence is first).
INPUT_ORDER_KEYWORDS = {q: ("return_inverse", "return_index") for q in ("numpy.unique", "jax.numpy.unique")}
# Builtins that turn an unordered collection into an ordered sequence.
ORDER_IMPOSING = {"list", "tuple", "enumerate", "zip", "iter", "next", "map", "filter", "dict.fromkeys", "str", "repr",
                  "json.dumps", "pickle.dumps",
                  "numpy.array", "numpy.asarray", "numpy.stack", "numpy.concatenate", "jax.numpy.array",
                  "jax.numpy.asarray", "collections.OrderedDict", "collections.deque"}
SET_CONSTRUCTORS = {"set", "frozenset"}
# Library calls whose result is a set (or a tuple of sets) of objects hashed by identity: a
# `Future`/`Task` has the default `__hash__`, so iterating `done` follows addresses, which differ
# between processes (`done, pending = concurrent.futures.wait(fs)`).
IDENTITY_SET_RESULTS = {"concurrent.futures.wait", "asyncio.wait"}
# Array functions whose arguments after the first are sets of values (membership): their order
# does not change the result.
MEMBERSHIP_ARRAY_OPS = {"numpy.isin", "numpy.in1d", "jax.numpy.isin", "jax.numpy.in1d"}
SET_METHODS = {"union", "intersection", "difference", "symmetric_difference", "copy"}


def singleton_when(op: str, k: int) -> bool | None:
    """For a test `len(s) <op> k`: True if it holds only when `s` has at most one element (taking
    that element, `s.pop()` or `next(iter(s))`, then has no order), False if it fails only then,
    None otherwise. Shared by the summary (`ast`) and the precise pass (libcst)."""
    if (op == "==" and k <= 1) or (op == "<=" and k <= 1) or (op == "<" and k <= 2):
        return True
    if (op == "!=" and k == 1) or (op == ">" and k <= 1) or (op == ">=" and k <= 2):
        return False
    return None


_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}


def singleton_test(op: str | None, left: tuple[str | None, int | None],
                   right: tuple[str | None, int | None]) -> tuple[str | None, bool]:
    """`len(s) <op> k` or `k <op> len(s)`, given each side as (name of `s` if it is `len(s)`,
    the small int if it is one): (`s`, `singleton_when`) or (None, False). The summary and the
    precise pass each read the two sides from their own tree."""
    if op is None:
        return None, False
    name, k = left[0], right[1]
    if name is None:
        name, k, op = right[0], left[1], _FLIPPED[op]
    if name is None or k is None:
        return None, False
    when = singleton_when(op, k)
    return (name, when) if when is not None else (None, False)

# --- Seeds (MCJ203 sinks). ----------------------------------------------------------------------------
SEED_CALLS = {
    "jax.random.PRNGKey", "jax.random.key", "jax.random.fold_in", "numpy.random.seed",
    "numpy.random.default_rng", "numpy.random.RandomState", "random.seed", "random.Random",
    "tensorflow.random.set_seed", "torch.manual_seed",
}

# --- Shapes (MCJ301). --------------------------------------------------------------------------------
# Array constructors: (positional index of the shape argument, shape keyword).
SHAPE_CONSTRUCTORS: dict[str, tuple[int, str]] = {}
for _ns in ("numpy", "jax.numpy"):
    for _fn in ("zeros", "ones", "empty", "full"):
        SHAPE_CONSTRUCTORS[f"{_ns}.{_fn}"] = (0, "shape")
    SHAPE_CONSTRUCTORS[f"{_ns}.arange"] = (0, "stop")
    SHAPE_CONSTRUCTORS[f"{_ns}.broadcast_to"] = (1, "shape")
    SHAPE_CONSTRUCTORS[f"{_ns}.reshape"] = (1, "newshape")
    SHAPE_CONSTRUCTORS[f"{_ns}.resize"] = (1, "new_shape")
    SHAPE_CONSTRUCTORS[f"{_ns}.pad"] = (1, "pad_width")
    SHAPE_CONSTRUCTORS[f"{_ns}.tile"] = (1, "reps")
SHAPE_CONSTRUCTORS["jax.ShapeDtypeStruct"] = (0, "shape")
# Array constructors that allocate an array of the shape they are given (first argument `shape`).
ALLOCATORS = frozenset(f"{ns}.{fn}" for ns in ("numpy", "jax.numpy") for fn in ("zeros", "ones", "empty", "full"))
SHAPE_METHODS = {"reshape", "astype", "resize"}
# Joining arrays along the first axis: `concatenate([x, zeros(K - len(x))])` pads x to K rows.
CONCATENATES = {f"{ns}.{fn}" for ns in ("numpy", "jax.numpy") for fn in ("concatenate", "vstack", "hstack", "append")}
# jax.Array methods that dispatch a computation over the array: on a global array, the same
# cross-process work as the `jnp` function of the same name (`x.sum()` is `jnp.sum(x)`).
GLOBAL_ARRAY_METHODS = frozenset({
    "sum", "mean", "max", "min", "prod", "std", "var", "any", "all", "argmax", "argmin", "cumsum",
    "cumprod", "dot", "clip", "round", "astype", "reshape", "ravel", "flatten", "squeeze",
    "transpose", "swapaxes", "sort", "argsort", "take", "repeat", "copy", "conj", "nonzero", "ptp",
})
# numpy / jax.numpy functions whose result's shape depends on the *values* of their input (how
# many are unique, non-zero, selected): process-local content in, a per-process shape out.
VALUE_SHAPED_FUNCTIONS = frozenset(
    f"{ns}.{fn}" for ns in ("numpy", "jax.numpy")
    for fn in ("unique", "unique_values", "unique_counts", "unique_inverse", "unique_all", "nonzero",
               "flatnonzero", "argwhere", "compress", "extract", "setdiff1d", "intersect1d",
               "union1d", "setxor1d", "trim_zeros", "bincount"))
# ... unless this keyword fixes the result's length (`np.bincount(labels, minlength=NUM_CLASSES)`,
# `np.histogram(x, bins=10)`): then the input's shape does not reach the result either.
LENGTH_KEYWORDS = {"bincount": "minlength", "histogram": "bins"}
# Class decorators that write `__init__` from the annotated fields, in order (a field's value is
# what the construction passes for it); and bases that do the same.
DATACLASS_DECORATORS = frozenset({"dataclasses.dataclass", "flax.struct.dataclass", "chex.dataclass",
                                  "attr.s", "attr.attrs", "attr.define", "attr.frozen", "attrs.define",
                                  "attrs.frozen", "attrs.mutable"})
DATACLASS_BASES = frozenset({"typing.NamedTuple", "flax.struct.PyTreeNode"})
# Calls that run a callable on another thread: (position, keyword) of the callable. Collective
# work started there races the main thread's for the order of dispatches (MCJ105).
THREAD_STARTERS = {
    "threading.Thread": (1, "target"),
    "threading.Timer": (1, "function"),
    "_thread.start_new_thread": (0, "function"),
    "asyncio.to_thread": (0, "func"),
}
# Methods of executors/event loops that run a callable on a worker thread (by method name: the
# receiver is rarely known).
THREAD_SUBMIT_METHODS = {"submit": (0, "fn"), "run_in_executor": (1, "func"), "apply_async": (0, "func")}
# Thread pools: `pool.map(f, xs)` on one runs `f` on several of its threads at once (matched only
# where the receiver is seen made by one of these); so does `submit` in a loop.
THREAD_POOLS = frozenset({"concurrent.futures.ThreadPoolExecutor", "concurrent.futures.thread.ThreadPoolExecutor",
                          "multiprocessing.pool.ThreadPool", "multiprocessing.dummy.Pool"})
THREAD_POOL_MAP_METHODS = {"map": (0, "fn"), "imap": (0, "func"), "imap_unordered": (0, "func"),
                           "starmap": (0, "func"), "map_async": (0, "func")}

# Calls that apply their first argument to the elements (leaves) of the others: `f(leaf, *rest)` for
# each leaf of the first tree and the matching leaves of the rest (`map(f, xs, ys)` likewise).
LEAF_MAPS = frozenset({"jax.tree.map", "jax.tree_util.tree_map", "jax.tree_map", "map"})


# Collectives that take per-process data by design: when the argument is visibly process-local,
# the order (or hash) of its content is as process-local as the content itself.
PER_PROCESS_DATA_COLLECTIVES = {
    "jax.experimental.multihost_utils.process_allgather",
    "jax.experimental.multihost_utils.broadcast_one_to_all",
    "jax.experimental.multihost_utils.host_local_array_to_global_array",
    "jax.make_array_from_process_local_data",
    "jax.make_array_from_single_device_arrays",
    "jax.make_array_from_callback",
}
# Arguments that list this process's own shards (position, keyword): their length is the number
# of devices the process addresses, by design different per process, and so are their order and
# content; only the global shape, dtype and sharding must agree (each shard's shape is the
# sharding's: JAX checks it on the process that builds the array).
PER_PROCESS_SHARD_LISTS: dict[str, tuple[int, str]] = {
    "jax.make_array_from_single_device_arrays": (2, "arrays"),
}
# Method names too generic to resolve by name to a project method when the receiver is unknown
# (`self._condition.wait()` is threading, not a checkpoint manager's `wait`).
GENERIC_METHOD_NAMES = {
    "wait", "join", "get", "put", "run", "start", "stop", "close", "save", "restore", "update", "read", "write",
    "flush", "result", "done", "cancel", "step", "call", "send", "recv", "submit", "apply", "map", "reset",
    "load", "next", "append", "extend", "pop", "add", "remove", "clear", "copy", "items", "keys", "values",
    "open", "exists", "delete", "set", "init", "setup", "build", "create", "process", "execute", "handle",
    "sync", "commit", "finalize", "shutdown", "acquire", "release", "notify", "fetch", "send_bytes",
}
# Attribute names too generic to resolve by name to a project class's attribute when the receiver
# is unknown (`input_config.data` is a config field, not an evaluator's per-process `self.data`).
GENERIC_ATTRIBUTE_NAMES = {
    "data", "dataset", "ds", "config", "cfg", "conf", "args", "kwargs", "options", "opts", "settings", "params",
    "state", "model", "module", "batch", "inputs", "outputs", "input", "output", "value", "values", "name",
    "path", "result", "results", "items", "shape", "dtype", "size", "step", "steps", "info", "meta", "metadata",
    "spec", "key", "rng", "mesh", "fn", "func", "labels", "features", "train", "eval", "test", "iterator",
    "loader", "metrics", "count", "index", "id", "x", "y",
}

# Calls that do not raise on the values programs give them (type checks, clocks, process ids): no
# point where a `try` body fails on one process (logging is recognized by name as well).
NON_RAISING_CALLS = frozenset({
    "isinstance", "issubclass", "hasattr", "callable", "id", "type", "len", "bool", "repr", "str", "print",
    "time.time", "time.time_ns", "time.perf_counter", "time.perf_counter_ns", "time.monotonic",
    "time.monotonic_ns", "time.process_time", "jax.process_index", "jax.process_count", "jax.host_id",
    "jax.host_count", "jax.local_device_count", "jax.device_count", "os.getpid", "socket.gethostname",
})
# Methods of the standard library's thread synchronization objects that never raise on the values
# programs give them: they wait and return (`Event.wait(timeout)` returns whether the flag was set,
# `Lock.acquire(timeout=t)` whether it was taken, `Condition.wait_for(pred, t)` the predicate's
# last value) or change or read a flag; a waiting one that can raise (`Barrier.wait()`: a
# BrokenBarrierError, `Queue.get(timeout=t)`: Empty) is not among them. By the class the receiver
# was made with (`ev = threading.Event()`).
NON_RAISING_METHODS = {
    "threading.Event": frozenset({"wait", "set", "clear", "is_set"}),
    "threading.Lock": frozenset({"acquire", "locked"}),
    "threading.RLock": frozenset({"acquire"}),
    "threading.Semaphore": frozenset({"acquire", "release"}),
    "threading.Condition": frozenset({"wait", "wait_for", "acquire"}),
    "threading.Thread": frozenset({"is_alive", "join"}),
}

# --- Process exit (MCJ102). ----------------------------------------------------------------------------
# Calls (by their last name) that convert or measure a value without I/O or state: a check built
# from a function's parameters with these only validates the arguments (divergence._checks_arguments).
PURE_CONVERSIONS = frozenset({
    "int", "float", "bool", "str", "len", "abs", "min", "max", "isinstance", "tuple", "list", "type",
    "asarray", "array", "reshape", "astype", "ravel", "flatten", "squeeze", "item", "ndim", "all", "any",
})
EXIT_CALLS = {"sys.exit", "os._exit", "os.abort", "exit", "quit"}

# --- Programs that are not multi-process. ---------------------------------------------------------
# A script that pins JAX to the CPU (`os.environ["JAX_PLATFORMS"] = "cpu"`, `jax.config.update(
# "jax_platforms", "cpu")`) and never calls `jax.distributed.initialize()` runs as one process.
PLATFORM_ENV_KEYS = {"JAX_PLATFORMS", "JAX_PLATFORM_NAME"}
PLATFORM_CONFIG_KEYS = {"jax_platforms", "jax_platform_name"}
# The TPU runtime's topology of the slice a process joins: all ones ("1,1,1") is a slice of this
# host alone, so every process so configured is a job of its own (independent per-host workers).
ONE_HOST_ENV_KEYS = {"TPU_HOST_BOUNDS", "TPU_PROCESS_BOUNDS"}
# A pytest module is run by one pytest process unless something starts it in several: a plugin's
# marker or fixture, or its own use of the multi-process API. A test module that names none of
# these (names, attributes, parameters, imported names; strings: environment keys) and reaches
# no `initialize()` (itself, its conftests, their imports) is a single-process program.
MULTI_PROCESS_NAMES = frozenset({
    "distributed", "process_index", "process_count", "host_id", "host_count", "multihost_utils",
    "process_allgather", "broadcast_one_to_all", "sync_global_devices", "assert_equal",
    "mcjax", "mpi", "MPI", "mpi4py", "mpirun", "multiprocess", "multihost", "multi_host",
    "num_processes", "process_id", "coordinator_address",
})

# A program whose every device set is this process's own (`jax.local_devices()`, a mesh of
# `jax.local_device_count()` devices) runs no cross-process work, initialized or not (on a TPU pod
# JAX is multi-process without `initialize()`): its computations never span another process's
# devices. Names that give or build a device set spanning every process (a mesh builder with no
# explicit devices uses `jax.devices()`), and libraries that synchronize every process on their own
# (orbax's checkpointers), make a module's device scope global.
LOCAL_DEVICE_CALLS = frozenset({"jax.local_devices", "jax.local_device_count"})
GLOBAL_DEVICE_NAMES = frozenset({
    "jax.devices", "jax.device_count", "jax.make_mesh",
    "jax.experimental.mesh_utils.create_hybrid_device_mesh", "jax.make_array_from_callback",
    "jax.make_array_from_single_device_arrays", "jax.make_array_from_process_local_data",
})
GLOBAL_DEVICE_PREFIXES = ("jax.experimental.multihost_utils.", "jax.distributed.", "orbax.")
# `create_device_mesh(shape)` takes `jax.devices()` unless given devices: a mesh of this process's
# devices only when its shape is the local device count (else it spans or fails on every process).
DEVICE_MESH_BUILDERS = frozenset({"jax.experimental.mesh_utils.create_device_mesh"})
# A mesh is over the devices it is given: local only where those are.
MESH_CONSTRUCTORS = frozenset({"jax.sharding.Mesh", "jax.experimental.maps.Mesh", "jax.interpreters.pxla.Mesh"})
# Wrappers that span every process's devices unless given `devices=` (pmap over all local devices is
# one global computation in multi-process JAX; `pmap(f, devices=jax.local_devices())` is local).
DEVICE_SPANNING_WRAPPERS = frozenset({"jax.pmap", "flax.nnx.pmap", "equinox.filter_pmap", "jax.experimental.maps.xmap",
                                      "flax.linen.pmap", "flax.jax_utils.pmap"})

# --- Device access before initialize (MCJ401). -------------------------------------------------------
INITIALIZE = "jax.distributed.initialize"
DEVICE_ACCESS_CALLS = {
    "jax.devices", "jax.device_count", "jax.local_devices", "jax.local_device_count",
    "jax.process_index", "jax.process_count", "jax.host_id", "jax.host_count", "jax.default_backend",
    "jax.device_put", "jax.block_until_ready", "jax.make_array_from_callback",
    "jax.make_array_from_single_device_arrays", "jax.make_array_from_process_local_data",
}
DEVICE_ACCESS_PREFIXES = ("jax.numpy.", "jax.random.", "jax.lax.", "jax.nn.")
# Under those prefixes, calls that only build functions or describe dtypes: no backend, no array
# (`bias_init = jax.nn.initializers.constant(0.0)`, `jnp.finfo(jnp.float32).min` at import time).
NO_DEVICE_ACCESS_PREFIXES = ("jax.nn.initializers.",)
NO_DEVICE_ACCESS_CALLS = {
    "jax.numpy.finfo", "jax.numpy.iinfo", "jax.numpy.dtype", "jax.numpy.result_type", "jax.numpy.promote_types",
    "jax.numpy.issubdtype", "jax.numpy.can_cast",
}


def is_device_access(q: str) -> bool:
    """Whether calling `q` touches the JAX backend (initializes it, makes or moves an array)."""
    if q in DEVICE_ACCESS_CALLS:
        return True
    return (q.startswith(DEVICE_ACCESS_PREFIXES) and not q.startswith(NO_DEVICE_ACCESS_PREFIXES)
            and q not in NO_DEVICE_ACCESS_CALLS)


def matches(name: str, patterns: tuple[str, ...] | set[str] | frozenset[str]) -> bool:
    """Whether a qualified name matches user patterns (exact, or a trailing `.*` prefix)."""
    if type(patterns) is tuple and len(patterns) > 8:
        # Observed functions make the declared list long: one set lookup, then the prefixes.
        exact, prefixes = _split_patterns(patterns)
        return name in exact or any(name.startswith(p) or name == p[:-1] for p in prefixes)
    for p in patterns:
        if p.endswith(".*"):
            if name.startswith(p[:-1]) or name == p[:-2]:
                return True
        elif name == p:
            return True
    return False


@functools.lru_cache(maxsize=16)
def _split_patterns(patterns: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """(exact names, prefixes ending in '.') of a pattern tuple."""
    return (frozenset(p for p in patterns if not p.endswith(".*")),
            tuple(p[:-1] for p in patterns if p.endswith(".*")))


def declared_collective_note(q: str, observed: tuple[tuple[str, str], ...]) -> str:
    """Why a declared collective function counts as collective work, as a finding says it: the
    user's declaration, or the guarded run that saw it do cross-process work."""
    for name, how in observed:
        if name == q:
            return how
    return "declared collective"
