"""Pieces of Python's semantics that both passes use, written once.

The summary pass (`summary.py`, stdlib `ast`, every file) and the precise pass (`taint.py`,
libcst, the files that can produce a finding) read different trees. They meet here through a
*reader*: a function that turns one node of its tree into a small normalized tuple (see
`read_ast.py` and `read_cst.py`):

    ("number", text)                 an int or float literal (not bool, not complex); text: an
                                     int's value as `repr` writes it, None for a float
    ("string", value)                a str literal (not bytes, not an f-string)
    ("text",)                        bytes or an f-string: hashed like a str
    ("name", "True"/"False"/"None")  those constants, as libcst reads them
    ("name", id)
    ("attr", value_node, attr)
    ("call", func_node, positional_arg_nodes, arg_nodes)   arg_nodes: every argument's value,
                                     positional then keyword (starred: the iterable)
    ("subscript", value_node)
    ("tuple", elt_nodes) / ("seq", elt_nodes)   a tuple; a list or set display
    ("comp", elt_node, [(target_node, iter_node), ...], [if_test_node, ...])   list/set comprehension, generator
    ("dict", value_nodes)            a dict display
    ("binop", op, left, right) / ("unary", op, operand)   op as written: "+", "%", "-", "~", "not", ...
    ("boolop", "and"/"or", value_nodes)
    ("compare", left, op, right)     one `==`, `!=`, `is`, `is not`, `<`, `<=`, `>` or `>=` comparison
    ("ifexp", body, orelse)
    ("lambda", body)
    ("other", type_name_lowercase)

and statements (for rules about a loop's body; a reader's `statements(block)` lists a block's):

    ("assign", target_nodes, value) / ("augassign", target, op, value)   op: "+", "|", ...
    ("if", test, then_block, else_block)
    ("expr", value) / ("break",) / ("continue",) / ("pass",) / ("return",)

A rule of Python decided here is decided once: the precise pass may know more (positions,
per-call-site context) but asks the same function, so the passes cannot disagree on it.
"""

from __future__ import annotations

import builtins
import copy
import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

from mcjax_lint import knowledge as K
from mcjax_lint.analysis import kinds
from mcjax_lint.analysis.env import branch_changes
from mcjax_lint.analysis.values import with_binding

Reader = Callable[[object], tuple]
NumName = Callable[[str], bool]

# Builtins whose result is a number whatever their argument.
NUMERIC_BUILTINS = frozenset({"len", "int", "float", "abs", "round", "id"})
# Attributes of arrays that are numbers.
NUMERIC_ATTRIBUTES = frozenset({"ndim", "size"})
# Binary operators that also apply to strings and sequences: `a + b` is a number only if a side is.
_SEQUENCE_OPERATORS = frozenset({"+", "%", "*"})


def is_range(node: object, read: Reader) -> bool:
    """`range(...)`: iterates over numbers."""
    r = read(node)
    return r[0] == "call" and read(r[1]) == ("name", "range")


def range_of_pieces(node: object, read: Reader, same: Callable[[object, object], bool]) -> bool:
    """`range(a, a + n)` (n long whatever `a` is: `window_length`) or `range(i, stop, n)` (a
    piece of equal ones: `piece_of_equal_ones`): what the start carries is which numbers, not
    how many (`range_counts` names what does count)."""
    return range_counts(node, read, same) is not None


def range_counts(node: object, read: Reader, same: Callable[[object, object], bool]) -> tuple | None:
    """The expressions whose content sets how many numbers `range(...)` gives, where its start's
    does not: (n,) for `range(a, a + n)`, (stop, step) for the piece `range(i, stop, n)`; None
    where every argument counts (`range(done, total, 2)`: ceil((total - done) / 2) numbers)."""
    r = read(node)
    if r[0] != "call" or read(r[1]) != ("name", "range") or len(r[2]) != len(r[3]):
        return None
    if len(r[2]) == 3 and piece_of_equal_ones(r[2][0], r[2][2], read):
        return (r[2][1], r[2][2])
    n = window_length(r[2][0], r[2][1], read, same) if len(r[2]) == 2 else None
    return None if n is None else (n,)


# Iterating an object calls these methods of its class (`for x in obj`, `iter(obj)`, `next(it)`):
# what they read is what the iteration yields and how long it runs.
ITERATION_METHODS = ("__iter__", "__next__")


# ---- gated calls: a function that calls a callable it was given only under a condition that may
# differ between processes (`if jax.process_index() == 0: return fn(*a, **k)`, or after `if not
# is_main(): return`) runs that callable on some processes only. A decorator whose wrapper does
# so (`rank_zero_only`) makes every call of the decorated function a gated call of its body:
# collective work in that body is issued by some processes only.
GATED_CALL = "called only where"
# Calls that run `target(*args)` on a new thread: a parameter in `args` reaches `target`'s.
THREAD_STARTERS = frozenset({"threading.Thread"})



# ---- context managers: `with cm:` calls `type(cm).__enter__(cm)` before the block and
# `__exit__` after it, whichever way the block is left: their collective work is the `with`'s,
# issued where the `with` runs (a `with` under a process-dependent branch issues it there only).
def context_manager_work(work_of: Callable[[str], str | None]) -> tuple[str | None, str | None]:
    """(collective work of `__enter__`, of `__exit__`), `work_of` giving a method's work."""
    enter, ex = work_of("__enter__"), work_of("__exit__")
    return (f"`__enter__()` → {enter}" if enter else None), ex


# ---- properties: reading `obj.attr` where `attr` is a `@property` (or `functools.cached_property`)
# runs its getter, so collective work in the getter is collective work at the read. Certain when
# the receiver's class is known (`self`, a constructed instance); resolved by the attribute's name
# alone (every project definition of that name is a property doing collective work) it is a guess.
PROPERTY_NOTE = "(property)"
# A `functools.cached_property` runs its getter at an instance's first read only: a later read (one
# every process made first, then one on process 0) runs nothing, so its work at a read is a guess.
CACHED_PROPERTY_NOTE = "(cached property: its first read only)"
CACHED_PROPERTY = 2  # `FunctionFacts.prop` of a cached property (1: a plain property)


def never_property(attr: str) -> bool:
    """Attribute names no project property is looked up for (dunders: `__class__`, `__dict__`)."""
    return attr.startswith("__") and attr.endswith("__")


def property_read_work(attr: str, getter_work: str, by_name_note: str | None = None, cached: bool = False) -> str:
    """The collective work of reading `.attr` whose getter does `getter_work` (with the note that
    marks a resolution by name only, a guess; a cached property's, `CACHED_PROPERTY_NOTE`)."""
    head = f"`.{attr}` {CACHED_PROPERTY_NOTE if cached else PROPERTY_NOTE}" + (f" {by_name_note}" if by_name_note else "")
    if getter_work.count("→") >= 2:
        getter_work = getter_work.removeprefix("… → ")
        return f"{head} → … → {getter_work.rsplit(' → ', 1)[-1]}"
    return f"{head} → {getter_work}"


# ---- attributes: an object outlives the branch that changed it
# An attribute assigned under a condition (`if self.rank == 0: self.stop = True`), after an early
# exit, or in a signal handler's body holds, wherever it is read later, a value that tells whether
# that condition held: the condition's sources reach the reads (implicit flow, as for a local
# name, but across methods and through other references to the object: `trainer.stop = True`).
# Whether the assignment ran before a given read is not known, so such a step is a guess. What a
# summary keeps of those conditions: their process dependence and what resolves to it later.
IMPLICIT_KEYS = ("pd", "pdc", "via", "refs")

# A signal arrives at the process it is sent to (a scheduler's preemption warning, a Ctrl-C on
# one worker), not at every process: what its handler sets differs between processes.
SIGNAL_HANDLER_DESC = "a flag set by a signal handler (a signal reaches one process, not all)"
SIGNAL_INSTALLERS = frozenset({"signal.signal"})


def signal_handler_name(q: str | None, args: Sequence[object], read: Reader) -> str | None:
    """The function or method (`self.on_signal`: its name) that `signal.signal(sig, handler)`
    installs, else None."""
    if q not in SIGNAL_INSTALLERS or len(args) < 2:
        return None
    h = read(args[1])
    if h[0] == "name" and h[1] not in ("None", "True", "False"):
        return h[1]
    if h[0] == "attr" and read(h[1]) in (("name", "self"), ("name", "cls")):
        return h[2]
    return None


def enumerate_position(iterable: object, target: object, read: Reader) -> object | None:
    """The index target of `for i, x in enumerate(xs)`: the position of x in xs's order (a value
    that differs where that order does, unlike x itself), else None."""
    it, tg = read(iterable), read(target)
    if it[0] != "call" or read(it[1]) != ("name", "enumerate") or tg[0] != "tuple" or len(tg[1]) != 2:
        return None
    return tg[1][0]


def none_tested(node: object, read: Reader) -> object | None:
    """`x is None` / `x is not None`: x. Such a test depends on whether x is None (its structure),
    not on its content: it differs between processes only where x's structure does. None for any
    other expression."""
    r = read(node)
    if r[0] == "compare" and r[2] in ("is", "is not") and read(r[3]) == ("name", "None"):
        return r[1]
    return None


# Calls that only report (logging, printing, writing scalars): they are taken not to fail.
LOG_NAMES = ("log", "print", "info", "debug", "warn", "error", "exception", "critical", "write_scalars", "flush")


def is_logging_call(name: str | None) -> bool:
    if not name:
        return False
    last = name.rsplit(".", 1)[-1].lower()
    return name.startswith(("logging.", "absl.logging")) or any(w in last for w in LOG_NAMES)


def can_fail_call(name: str | None, collective: bool) -> bool:
    """Whether a call named `name` is a step that can fail on one process (then a `try` around
    it ends differently there): anything but collective work (which fails everywhere or hangs),
    logging, and the calls known not to raise on the values programs give them."""
    return not collective and not is_logging_call(name) and name not in K.NON_RAISING_CALLS


def never_raising_method(call: object, read: Reader, scope, qualify: Qualify) -> bool:
    """Whether a method call cannot fail (`K.NON_RAISING_METHODS`): its receiver is a name that
    holds, where it is read, an object made by one of those classes (`done = threading.Event()`
    assigned once in the innermost scope binding it, an enclosing function's or the module's
    included: `bound_call`), and the method is one of that class's that only wait and return
    (`done.wait()` returns False on a timeout, it raises nothing)."""
    r = read(call)
    if r[0] != "call":
        return False
    f = read(r[1])
    if f[0] != "attr":
        return False
    made = bound_call(f[1], read, scope)
    if made is f[1] or read(made)[0] != "call":
        return False
    cls = qualify(read(made)[1])
    return cls is not None and f[2] in K.NON_RAISING_METHODS.get(cls, ())


def is_numeric(node: object, read: Reader, num_name: NumName, bound: Collection[str] = frozenset()) -> bool:
    """A syntactic guess that `node` is a number: literals, `len()` and the like, arithmetic,
    array sizes, names the pass has seen bound to numbers (`num_name`) or bound by `range()`
    (`bound`). Sides of `+` and of ternaries are taken to have one type: one numeric side is
    enough."""
    r = read(node)
    tag = r[0]
    if tag == "number":
        return True
    if tag == "name":
        return r[1] in bound or num_name(r[1])
    if tag == "call":
        f = read(r[1])
        return f[0] == "name" and f[1] in NUMERIC_BUILTINS
    if tag == "attr":
        return r[2] in NUMERIC_ATTRIBUTES
    if tag == "subscript":
        v = read(r[1])
        return v[0] == "attr" and v[2] == "shape"
    if tag == "tuple":
        return bool(r[1]) and all(is_numeric(e, read, num_name, bound) for e in r[1])
    if tag == "binop":
        if r[1] not in _SEQUENCE_OPERATORS:
            return True  # -, //, /, **, bit operations: not strings
        return is_numeric(r[2], read, num_name, bound) or is_numeric(r[3], read, num_name, bound)
    if tag == "unary":
        return r[1] in ("-", "~")
    if tag == "ifexp":
        return is_numeric(r[1], read, num_name, bound) or is_numeric(r[2], read, num_name, bound)
    return False


# Builtins whose result is a bool (hashed as 0 or 1 everywhere).
BOOL_BUILTINS = frozenset({"bool", "isinstance", "issubclass", "callable", "hasattr", "any", "all"})
# Builtins whose result is a str (hashed with the per-process salt).
STR_BUILTINS = frozenset({"str", "repr", "format", "chr", "hex", "oct", "bin", "ascii"})
# Set order: what a set's iteration order depends on (`set_order`).
SALTED = True  # its elements are str/bytes (or hold them): the order differs between processes
GUESS = "guess"  # element types unknown: it differs if they are strings or objects hashed by id()


def hash_is_fixed(node: object, read: Reader, num_name: NumName, bound: Collection[str] = frozenset()) -> bool:
    """Whether `hash(node)` is the same number in every process. CPython hashes ints and floats by
    value, bools as 0/1 and None by a constant; a tuple or frozenset of such hashes its elements.
    Only str and bytes are salted per process (PYTHONHASHSEED), and objects with the default
    `__hash__` hash by `id()`."""
    if is_numeric(node, read, num_name, bound):
        return True
    r = read(node)
    tag = r[0]
    if tag == "name":
        return r[1] in ("True", "False", "None")
    if tag in ("compare", "other"):
        return tag == "compare" or r[1] in ("comparison", "compare")  # `a < b`, `x in s`: a bool
    if tag == "unary":
        return r[1] == "not"
    if tag == "tuple":
        return all(hash_is_fixed(e, read, num_name, bound) for e in r[1])
    if tag == "ifexp":  # `(seed, step) if by_step else (seed,)`: whichever arm is taken
        return hash_is_fixed(r[1], read, num_name, bound) and hash_is_fixed(r[2], read, num_name, bound)
    if tag == "call":
        f = read(r[1])
        if f[0] != "name":
            return False
        if f[1] in BOOL_BUILTINS:
            return True
        if f[1] in ("frozenset", "tuple"):  # of fixed elements (`frozenset({1, 2})`, `tuple(range(n))`)
            return not r[2] or (len(r[2]) == 1 and elements_hash_fixed(r[2][0], read, num_name))
    return False


def is_text(node: object, read: Reader) -> bool:
    """Certainly a str or bytes (salted hash): a literal, an f-string, `str()` and the like, or a
    `+`/`%` with such a side."""
    r = read(node)
    if r[0] in ("string", "text"):
        return True
    if r[0] == "call":
        f = read(r[1])
        return f[0] == "name" and f[1] in STR_BUILTINS or f[0] == "attr" and f[2] in STR_METHODS
    if r[0] == "subscript":  # `name.split("/")[0]`: an element of a str's split
        v = read(r[1])
        return v[0] == "call" and read(v[1])[0] == "attr" and read(v[1])[2] in SPLIT_METHODS
    if r[0] == "binop" and r[1] in ("+", "%"):
        return is_text(r[2], read) or is_text(r[3], read)
    return False


# Methods only str (and bytes) have, whose result is one: called on a name, they say it holds text.
STR_METHODS = frozenset({"format", "join", "lower", "upper", "strip", "lstrip", "rstrip", "casefold", "title",
                         "removeprefix", "removesuffix", "zfill", "ljust", "rjust", "capitalize", "swapcase"})
STR_TEST_METHODS = frozenset({"startswith", "endswith", "isdigit", "isalpha", "isalnum", "isidentifier", "isspace",
                              "islower", "isupper", "isnumeric", "isdecimal"})
SPLIT_METHODS = frozenset({"split", "rsplit", "splitlines", "partition", "rpartition"})


def _tests_text(test: object, name: str, read: Reader) -> bool:
    """Whether a comprehension's filter calls a str-only method on `name` (`n.startswith("a")`)."""
    r = read(test)
    if r[0] == "unary" and r[1] == "not":
        return _tests_text(r[2], name, read)
    if r[0] == "call":
        f = read(r[1])
        if f[0] == "attr" and f[2] in (STR_TEST_METHODS | STR_METHODS | SPLIT_METHODS):
            return read(f[1]) == ("name", name)
    return False


def elements_hash_fixed(node: object, read: Reader, num_name: NumName) -> bool:
    """Whether a collection built from `node` holds values whose hashes (hence the iteration order
    of a set of them) are the same in every process: numbers, bools, None, tuples of them."""
    r = read(node)
    if r[0] == "comp":
        bound = set()
        for target, it in r[2]:
            t = read(target)
            if t[0] == "name" and is_range(it, read):
                bound.add(t[1])
        return hash_is_fixed(r[1], read, num_name, bound)
    if r[0] in ("seq", "tuple"):
        return bool(r[1]) and all(hash_is_fixed(e, read, num_name) for e in r[1])
    if r[0] == "name":
        return num_name(r[1])
    return is_range(node, read)


numeric_elements = elements_hash_fixed  # (the name both passes ask by)


def _elements_text(node: object, read: Reader) -> bool:
    """Whether some element of a collection built from `node` is certainly a str/bytes or a
    tuple holding one, which hashes with the string's salt (`_holds_text`, as `hash_salt`; a
    str literal itself iterates as its characters)."""
    r = read(node)
    if r[0] == "comp":
        e = read(r[1])
        return _holds_text(r[1], read) or e[0] == "name" and any(_tests_text(t, e[1], read) for t in r[3])
    if r[0] in ("seq", "tuple"):
        return any(_holds_text(e, read) for e in r[1])
    return r[0] in ("string", "text")


def set_order(arg: object | None, read: Reader, num_name: NumName) -> bool | str:
    """What iterating a set built from `arg` (a display, a comprehension, `set(arg)`) follows:
    False if its order is the same in every process (empty, or of numbers/bools/None and tuples
    of them); `SALTED` if its elements are certainly strings or bytes; `GUESS` when their type is
    unknown (it differs if they are strings or objects hashed by identity)."""
    if arg is None or elements_hash_fixed(arg, read, num_name):
        return False
    return SALTED if _elements_text(arg, read) else GUESS


# Dict views that are sets of their dict's keys (or items): `a.keys() | b`, `a.items() & b`.
SET_LIKE_VIEWS = frozenset({"keys", "items"})


def view_set_order(node: object, read: Reader) -> bool | str:
    """What iterating the result of a set operator (`|`, `&`, `-`, `^`) with `node` on one side
    follows, where `node` is a dict's keys or items view (`d.keys()`, `d.items()`): the result
    is a set of the dict's keys (items), whose type is unknown here (`GUESS`); False otherwise."""
    r = read(node)
    if r[0] != "call" or r[2]:
        return False
    f = read(r[1])
    return GUESS if f[0] == "attr" and f[2] in SET_LIKE_VIEWS else False


# Set methods that put elements into the set they are called on.
SET_ADDING_METHODS = frozenset({"add", "update"})


def set_order_added(meth: str, args: Sequence[object], read: Reader, num_name: NumName) -> bool | str:
    """What iterating a set follows once `s.add(x)` / `s.update(xs, ...)` put elements in it (a set
    built empty and filled later): `set_order` of what was added (`hash_salt` of an added element)."""
    if meth == "add":
        return hash_salt(args[0], read, num_name) if len(args) == 1 else False
    if meth == "update":
        out: bool | str = False
        for a in args:
            out = stronger_order(out, set_order(a, read, num_name))
        return out
    return False


def stronger_order(a: bool | str, b: bool | str) -> bool | str:
    """The join of two `set_order` claims: certain beats a guess, a guess beats none."""
    return SALTED if a is SALTED or b is SALTED else (a or b)


def set_iteration_desc(order: bool | str) -> str:
    """How a finding names the source of an order taken from iterating such a set."""
    if order == GUESS:
        return "iteration over a set of elements of unknown type"
    return "iteration over a set"


def set_order_differs(arg: object | None, read: Reader, num_name: NumName) -> bool:
    """`set(arg)` / `frozenset(arg)`: iterating it follows its elements' hashes, salted per process
    for strings; an empty set, or one of numbers (`set(range(n))`), iterates alike everywhere."""
    return bool(set_order(arg, read, num_name))


def hash_salt(arg: object | None, read: Reader, num_name: NumName) -> bool | str:
    """What `hash(arg)` depends on besides its value: False when it is the same number in every
    process (numbers, bools, None, tuples and frozensets of them: `hash(7) == 7`); `SALTED` when
    `arg` is certainly a str/bytes or a tuple holding one (PYTHONHASHSEED salts those per
    process); `GUESS` when its type is unknown (it differs only if it is or holds a str/bytes, or
    is an object hashed by identity)."""
    if arg is not None and hash_is_fixed(arg, read, num_name):
        return False
    return SALTED if arg is not None and _holds_text(arg, read) else GUESS


def _holds_text(node: object, read: Reader) -> bool:
    r = read(node)
    if r[0] == "tuple":
        return any(_holds_text(e, read) for e in r[1])
    if r[0] == "ifexp":
        return _holds_text(r[1], read) or _holds_text(r[2], read)
    return is_text(node, read)


def hash_differs_between_processes(arg: object | None, read: Reader, num_name: NumName) -> bool:
    """`hash(x)`: a string's (bytes', and of anything holding them) is salted per process
    (PYTHONHASHSEED); a number's is its value everywhere (`hash(7) == 7`), so hashing a number
    is no source. (Certain or a guess: `hash_salt`.)"""
    return bool(hash_salt(arg, read, num_name))


def hash_desc(salt: bool | str) -> str:
    """How a finding names the source `hash()` of a value (`hash_salt`)."""
    return "`hash()` of a value of unknown type" if salt == GUESS else "`hash()` of a string"


LOCAL_SHARDS_OF_UNKNOWN = "this process's shards of an array not known to be global"


LOCAL_SHARDS_OF_GLOBAL = "this process's shards of a global array"
_LOCAL_SHARDS = "this process's shards of "  # (of a global array, or of one not known to be: a guess)
# What says where a shard lies, which the sharding decides (not what it holds: `shard.data`).
SHARD_PLACEMENT_ATTRIBUTES = frozenset({"index", "device", "replica_id"})
SHARD_PLACE = "where "  # (prefixed to a local-shards source read through one of them)


def shard_placement(desc: str) -> str | None:
    """The description of where this process's shards lie, for a local-shards source `desc`
    read through `SHARD_PLACEMENT_ATTRIBUTES`; None for any other source."""
    return SHARD_PLACE + desc + " lie" if desc.startswith(_LOCAL_SHARDS) else None
# Where a process is, by its identity: its index or rank (read, or from a per-process variable).
_IDENTITY_KINDS = frozenset({kinds.PROCESS_ID, kinds.ENVIRONMENT, kinds.DECLARED})


def layout_check(sides: list[tuple[frozenset, frozenset]], equality: bool) -> bool:
    """Whether a comparison `a == b` / `a != b` (`equality`; each side's (pd, pdc) sources)
    checks the layout of a global array: one side reads only where this process's own shard of
    it lies (`shard.index`, `shard_placement`; not what it holds, `shard.data`), the other only this process's index or
    rank and the job's size (`rank * rows_per_process`). The sharding, the same on every process, places each
    process's shard where its index says, so the test comes out alike everywhere unless the job
    is laid out otherwise than the program assumes (a guess either way)."""
    if not equality or len(sides) != 2:
        return False
    def shard_side(pd: frozenset, pdc: frozenset) -> bool:
        return bool(pd | pdc) and all(x.kind == kinds.LOCAL_DATA and x.desc.startswith(SHARD_PLACE + _LOCAL_SHARDS)
                                      for x in pd | pdc)
    def identity_side(pd: frozenset, pdc: frozenset) -> bool:
        return bool(pd) and all(kinds.unguarded(x.kind) in _IDENTITY_KINDS for x in pd | pdc)
    (a, b) = sides
    return (shard_side(*a) and identity_side(*b)) or (shard_side(*b) and identity_side(*a))


def local_shards_desc(member: str, of_global: bool | str) -> str:
    """How a finding names this process's shards of an array read through `member`
    (`knowledge.LOCAL_SHARD_ATTRIBUTES`/`LOCAL_SHARD_METHODS`): certain of a global array (each
    process holds other shards of it), a guess (`GUESS`) of an array not known to be one (a
    replicated or single-process array's shards are the same everywhere)."""
    if of_global == GUESS:
        return f"{LOCAL_SHARDS_OF_UNKNOWN} (`.{member}`)"
    return f"{LOCAL_SHARDS_OF_GLOBAL} (`.{member}`)"


# Seeding a module's global RNG (`random.seed(s)`, `np.random.seed(s)`): its later draws follow s.
MODULE_SEED_CALLS = frozenset({"random.seed", "numpy.random.seed"})


def module_seeded_by(q: str) -> str | None:
    """The module whose global RNG the call `q` seeds, None if it seeds none."""
    return q.rsplit(".", 1)[0] if q in MODULE_SEED_CALLS else None


# Modules whose functions draw from a global RNG the program may seed (`random.seed(s)`): a
# stored reference to one is left alone (whether its calls differ depends on that seeding).
_SEEDABLE_MODULES = frozenset({"random", "numpy.random"})


def source_function(q: str | None) -> bool:
    """Whether `q` names a library function whose every call differs between processes (the
    clock, the host name, `jax.process_index`): a reference to it bound to a name, a default
    parameter or an attribute and called through that is the same source (`Val.srcq`)."""
    return bool(q) and "()`" in K.PROCESS_DEPENDENT_CALLS.get(q, "") and q.rsplit(".", 1)[0] not in _SEEDABLE_MODULES


def process_dependent_call(q: str, seeded_modules: Collection[str], n_args: int,
                           seeded_per_process: Collection[str] = ()) -> str | None:
    """How a call to `q` differs between processes (the source's description), None if it does
    not by itself: a per-process call (`jax.process_index()`, the clock, the host name; a
    `random` module function unless the file seeds that module, or seeds it with a
    process-dependent value, `seeded_per_process`: `random.seed(SEED + jax.process_index())`),
    anything under a per-process prefix, an RNG constructed without a seed."""
    if q in K.PROCESS_DEPENDENT_CALLS and q.rsplit(".", 1)[0] in seeded_per_process:
        mod = q.rsplit(".", 1)[0]
        return f"`{q.replace('numpy.', 'np.')}()` after `{mod.replace('numpy.', 'np.')}.seed()` with a process-dependent seed"
    if q in K.PROCESS_DEPENDENT_CALLS and q.rsplit(".", 1)[0] not in seeded_modules:
        return K.PROCESS_DEPENDENT_CALLS[q]
    for pre, desc in K.PROCESS_DEPENDENT_PREFIXES.items():
        if q.startswith(pre):
            return desc
    if q in K.UNSEEDED_RNG_CONSTRUCTORS and not n_args:
        return f"unseeded `{q}()`"
    if q in K.CLOCK_UNLESS_TIME_GIVEN and n_args <= K.CLOCK_UNLESS_TIME_GIVEN[q]:
        return f"the wall clock (`{q}()`)"
    return None


# `strftime` directives that always write the same number of characters (zero-padded numbers:
# `%Y` four digits for the years 1000-9999, `%f` six); a name (`%a`, `%B`, `%p`) depends on the
# day and the locale, and `%Z`/`%z` may be empty.
_FIXED_WIDTH_TIME_DIRECTIVES = frozenset("YmdHMSyjfIUWwuVG%")


def fixed_width_time_format(args: list, read: Reader) -> bool:
    """Whether `strftime`'s arguments `args` are one literal format whose every directive has a
    fixed width (`"%Y%m%d_%H%M%S"`): whatever time it formats, the string has one length."""
    if len(args) != 1:
        return False
    r = read(args[0])
    if r[0] != "string" or not isinstance(r[1], str):
        return False
    fmt = r[1]
    i = fmt.find("%")
    while i >= 0:
        if i + 1 >= len(fmt) or fmt[i + 1] not in _FIXED_WIDTH_TIME_DIRECTIVES:
            return False
        i = fmt.find("%", i + 2)
    return True


# A sort key of few values: `sorted` (and `list.sort`) is stable, so the elements a key maps to
# one value keep the order they came in; a key that can take only a few values (a constant, a
# truth value, a conditional of such, a tuple of such) ties whole groups of elements, and an
# input in a set's order (or any per-process order) keeps that order inside each group
# (`sorted(keys, key=lambda k: 0 if k.startswith("loss") else 1)`). A key of many values
# (`len`, the element itself, a tuple holding it) is taken as ordering them all.
_FEW_VALUED_CALLS = frozenset({"bool", "isinstance", "issubclass", "callable", "hasattr"})
_FEW_VALUED_METHODS = frozenset({"startswith", "endswith", "isdigit", "isalpha", "isalnum", "isnumeric", "isdecimal",
                                 "islower", "isupper", "isspace", "isidentifier", "istitle", "is_dir", "is_file",
                                 "exists"})
TIED_SORT_DESC = ", kept by a sort whose key ties"


def _few_valued(node: object, read: Reader, depth: int = 0) -> bool:
    """Whether the expression `node` can take only a few values whatever it reads (see above)."""
    if depth > 4:
        return False
    r = read(node)
    k = r[0]
    if k in ("number", "string", "text", "compare"):
        return True
    if k == "name":
        return r[1] in ("True", "False", "None")
    if k == "other":
        return r[1] in ("compare", "comparison")  # (`x in s`, chained comparisons: a truth value)
    if k == "unary":
        return r[1] == "not" or r[1] in ("-", "+") and _few_valued(r[2], read, depth + 1)
    if k == "ifexp":
        return _few_valued(r[1], read, depth + 1) and _few_valued(r[2], read, depth + 1)
    if k in ("boolop", "tuple"):
        vals = r[2] if k == "boolop" else r[1]
        return bool(vals) and all(_few_valued(v, read, depth + 1) for v in vals)
    if k == "call":
        f = read(r[1])
        return f[0] == "name" and f[1] in _FEW_VALUED_CALLS or f[0] == "attr" and f[2] in _FEW_VALUED_METHODS
    return False


def _uneven_points(points: list, read: Reader) -> bool:
    """Whether split points written as int literals (`[3, 5]`) cut pieces of known, different
    lengths before the last (3 and 2): which piece an index picks then decides its length."""
    vals = []
    for p in points:
        r = read(p)
        if r[0] != "number" or r[1] is None:
            return False
        vals.append(int(r[1]))
    gaps = [b - a for a, b in zip([0, *vals], vals)]
    return len(set(gaps)) > 1


def sort_key_ties(keywords: list, read: Reader) -> bool:
    """Whether a sort given the keyword arguments `keywords` ((name, node) pairs) orders by a key
    of few values (`_few_valued`: a lambda whose body is one, or `bool`): the elements it ties keep
    their input's order."""
    for name, value in keywords:
        if name != "key":
            continue
        r = read(value)
        if r[0] == "lambda" and len(r) > 1:
            return _few_valued(r[1], read)
        return r[0] == "name" and r[1] == "bool"
    return False


# Methods, without arguments, that read how far other threads got at this moment: a thread's
# liveness, an event's flag, a future's state, a queue's fill. Each process schedules its threads
# alone, so the answer differs between processes unless they agree on it (a reduction). Matched
# by name (receivers are rarely known): a guess (evidence.py).
THREAD_STATE_METHODS = {
    "is_alive": "a thread's liveness (`.is_alive()`)",
    "is_set": "an event's flag set by another thread (`.is_set()`)",
    "done": "a future's or task's state (`.done()`)",
    "running": "a future's state (`.running()`)",
    "qsize": "a queue's fill (`.qsize()`)",
    "empty": "a queue's fill (`.empty()`)",
}
THREAD_STATE_PREFIX = "thread scheduling: "


def thread_state_desc(meth: str, n_args: int) -> str | None:
    """The source description of `x.meth()` when it reads another thread's progress
    (`THREAD_STATE_METHODS`), None otherwise (or when given arguments: `q.empty(x)` is another API)."""
    d = THREAD_STATE_METHODS.get(meth)
    return f"{THREAD_STATE_PREFIX}{d}" if d is not None and n_args == 0 else None


def process_dependent_kind(q: str) -> str:
    """What a process-dependent call's value is (analysis/kinds.py: the process's or host's
    identity, the clock, randomness, this process's data)."""
    return next((kind for pre, kind in K.PROCESS_DEPENDENT_KINDS if q == pre or q.startswith(pre)), "")


# ---- order-free accumulation: what a loop computes that does not depend on its iteration order ----
# `best = max(best, x)`, `if x > best: best = x`, `total += x`, `found = True`: after the loop the
# accumulator holds a maximum, a sum, a flag over all elements, whatever order they came in (as
# `max(...)` or `any(...)` of them would). Each update must use only the current element (names
# the body computes from it), never another value the loop carries (a "first three" counter, a
# prefix sum tested for a `break`, would make it order-dependent); a `break` keeps only flags.

_ACCUMULATING_OPS = frozenset({"+", "-", "*", "|", "&", "^"})  # commutative and associative on numbers


class Statements:
    """What `order_free_accumulators` asks a pass's reader: `read`, `statements(block)`,
    `names_in(expr)` (variable names it reads), `same(a, b)` (written alike)."""

    def __init__(self, read: Reader, statements: Callable, names_in: Callable, same: Callable) -> None:
        self.read, self.statements, self.names_in, self.same = read, statements, names_in, same


def order_free_accumulators(target: object, body: object, rd: Statements, num_name: NumName) -> frozenset[str]:
    """The names a `for` loop (target `target`, block `body`) only accumulates order-free: after
    the loop their value is the same whatever order the iteration went in."""
    read = rd.read
    flat: list[tuple[tuple, list]] = []  # (statement, the `if` tests above it in the body)

    def walk(block, tests: list) -> bool:
        for st in rd.statements(block):
            r = read(st)
            if r[0] == "if":
                flat.append((("test", r[1]), tests))
                if not (walk(r[2], tests + [r[1]]) and walk(r[3], tests + [r[1]])):
                    return False
            elif r[0] in ("assign", "augassign", "expr", "break", "continue", "pass", "return"):
                flat.append((r, tests))
            else:
                return False  # nested loops, try, with, ...: not followed
        return True

    if not walk(body, []):
        return frozenset()
    derived = set(rd.names_in(target))  # the element, and names computed from it alone
    assigned: dict[str, list] = {}
    for r, tests in flat:
        for t in (r[1] if r[0] == "assign" else [r[1]] if r[0] == "augassign" else []):
            t_r = read(t)
            for n in ([t_r[1]] if t_r[0] == "name" else rd.names_in(t)):
                assigned.setdefault(n, []).append((r, tests))
        if r[0] == "expr":  # `seen.append(x)`: the receiver is loop-carried state
            for n in _receivers(r[1], read):
                assigned.setdefault(n, []).append((("mutated",), tests))

    # (names computed from the element alone under tests of it alone, read only after that and
    # under them: the element's own where read, yet what they hold after the loop is the last
    # such element's, unless they accumulate: `found = True` is a flag)
    own: set[str] = set()

    def free(node) -> bool:
        return all(n in derived or n in own or n not in assigned for n in rd.names_in(node))

    for i, (r, tests) in enumerate(flat):
        if r[0] == "assign" and len(r[1]) == 1 and read(r[1][0])[0] == "name":
            n = read(r[1][0])[1]
            if len(assigned.get(n, ())) == 1 and free(r[2]):
                if not tests:
                    derived.add(n)
                elif all(free(t) for t in tests) and _read_only_after(n, i, tests, flat, rd):
                    own.add(n)
    has_break = False
    for r, tests in flat:
        if r[0] in ("break", "continue"):
            has_break = has_break or r[0] == "break"
            if not all(free(t) for t in tests):
                return frozenset()  # leaving on loop-carried state: how far it got depends on the order
    out = set()
    for n, updates in assigned.items():
        if n in derived:
            continue
        how = {_accumulation(n, r, tests, rd, num_name, free) for r, tests in updates}
        if None in how or len(how) != 1 or (has_break and not next(iter(how)).startswith("flag")):
            continue
        out.add(n)
    return frozenset(out)


def rewound_counters(loop_test: object, block: object, rd: Statements) -> frozenset[str]:
    """The names a block that ends by `continue` (an arm of an `if` in a `while` loop whose test is
    `loop_test`) sets back: a plain `name = value` of a name the loop's test reads, from a value
    that does not read the name itself (`step = ckpt_step`, `step = 0`: a reset or a rewind to a
    stored value; `step = step + 1` or `step += 1` advances it). The loop then runs again from
    that value: the iterations between it and where the process was are redone, not skipped, so
    which collective work the processes issue at each of the counter's values (`if step % k ==
    0:`) agrees unless the processes rewind across such work by different amounts, which only the
    data decides."""
    sts = rd.statements(block)
    if not sts or rd.read(sts[-1])[0] != "continue":
        return frozenset()
    tested = rd.names_in(loop_test)
    out: set[str] = set()
    advanced: set[str] = set()
    for st in sts:
        r = rd.read(st)
        if r[0] == "assign":
            for t in r[1]:
                tr, vr = rd.read(t), rd.read(r[2])
                # (`step, done = ckpt_step, False`: each name from its own element)
                pairs = (list(zip(tr[1], vr[1])) if tr[0] == "tuple" and vr[0] == "tuple" and len(tr[1]) == len(vr[1])
                         else [(t, r[2])])
                for x, value in pairs:
                    xr = rd.read(x)
                    if xr[0] == "name" and xr[1] in tested:
                        (advanced if xr[1] in rd.names_in(value) else out).add(xr[1])
        elif r[0] == "augassign":
            advanced.update(n for n in rd.names_in(r[1]) if n in tested)
    return frozenset(out - advanced)


def _read_only_after(n: str, at: int, tests: list, flat: list, rd: Statements) -> bool:
    """Whether the body reads `n`, assigned at `flat[at]` under `tests`, only after it and under
    those same tests (`if m: k = f(m)` then `if k > best:` inside that `if`): each read then sees
    this iteration's value, computed from the element alone. A read elsewhere may see an earlier
    iteration's (the loop carries it)."""
    for j, (r, inner) in enumerate(flat):
        if j == at or not any(n in rd.names_in(x) for x in _entry_nodes(r)):
            continue
        if j < at or len(inner) < len(tests) or any(a is not b for a, b in zip(inner, tests)):
            return False
    return True


def _entry_nodes(r: tuple) -> list:
    """The expressions of one statement of a body `order_free_accumulators` reads."""
    out: list = []
    for x in r[1:]:
        if isinstance(x, list):
            out.extend(x)
        elif x is not None and not isinstance(x, str):
            out.append(x)
    return out


def _receivers(expr: object, read: Reader) -> list[str]:
    r = read(expr)
    if r[0] != "call":
        return []
    f = read(r[1])
    while f[0] == "attr":
        f = read(f[1])
    return [f[1]] if f[0] == "name" and read(r[1])[0] == "attr" else []


def _accumulation(n: str, r: tuple, tests: list, rd: Statements, num_name: NumName, free) -> str | None:
    """How one update of `n` accumulates: "reduce", "flag:<constant>", or None (order-dependent)."""
    read = rd.read
    if r[0] == "augassign":
        ok = read(r[1]) == ("name", n) and r[2] in _ACCUMULATING_OPS and num_name(n) and free(r[3])
        return "reduce" if ok and all(free(t) for t in tests) else None
    if r[0] != "assign" or len(r[1]) != 1 or read(r[1][0]) != ("name", n):
        return None
    v = read(r[2])
    if v[0] in ("number", "string") or v[0] == "name" and v[1] in ("True", "False", "None"):
        return f"flag:{v[0]}:{v[1]}" if all(free(t) for t in tests) else None
    if v[0] == "call" and read(v[1]) in (("name", "max"), ("name", "min")) and len(v[2]) == 2 == len(v[3]):
        # `best = max(best, x)`
        a, b = v[2]
        ok = read(a) == ("name", n) and free(b) or read(b) == ("name", n) and free(a)
        return "reduce" if ok and all(free(t) for t in tests) else None
    if not free(r[2]) or not all(free(t) for t in tests[:-1]):
        return None
    # `if x > best: best = x` (also `best is None or x > best`, with other conditions on x)
    return "reduce" if tests and _extremum_test(tests[-1], n, r[2], rd, free) else None


def _extremum_test(test: object, n: str, value: object, rd: Statements, free) -> bool:
    read = rd.read
    t = read(test)
    if t[0] == "compare" and t[2] in ("<", "<=", ">", ">="):
        return any(rd.same(x, value) and read(y) == ("name", n) for x, y in ((t[1], t[3]), (t[3], t[1])))
    if t[0] == "boolop" and t[1] == "and":
        hits = [p for p in t[2] if not free(p)]
        return len(hits) == 1 and _extremum_test(hits[0], n, value, rd, free)
    if t[0] == "boolop" and t[1] == "or" and len(t[2]) == 2:
        first, second = (read(p) for p in t[2])
        none_test = first[0] == "compare" and first[2] == "is" and read(first[1]) == ("name", n) \
            and read(first[3]) == ("name", "None")
        return none_test and _extremum_test(t[2][1], n, value, rd, free)
    return False


# Builtins whose result depends on their argument's type (or its attributes' presence), not on
# its content: they differ between processes only where the argument's structure does.
TYPE_PREDICATES = frozenset({"isinstance", "issubclass", "type", "callable", "hasattr"})
# Builtins that make one number of their argument: a scalar, whatever its shape (and `bool`, `any`,
# `all`, order-free ones: `order_free_call`).
SCALAR_CONVERSIONS = frozenset({"int", "float", "complex"})
# A copy of an object with some of its fields set anew: `dataclasses.replace(obj, seed=s)`,
# `copy.replace` (3.13), a namedtuple's `obj._replace(seed=s)`, a flax/chex struct's
# `obj.replace(seed=s)` (keywords only). Its other fields are obj's: a per-process value given for
# one field is not every field's (`with_fields`: as a store into one attribute, a guess).
COPY_WITH_FIELDS_CALLS = frozenset({"dataclasses.replace", "copy.replace"})
COPY_WITH_FIELDS_METHODS = frozenset({"replace", "_replace"})
# Calls that read a file, or ask whether one exists, at the path they are given (a file object
# made from a path reads that path). Where the path differs between processes, what they read
# differs only where the files do: a guess (`evidence.FILE_CONTENT`, `file_content`).
FILE_READ_CALLS = frozenset({
    "open", "io.open", "numpy.load", "numpy.loadtxt", "numpy.genfromtxt",
    "numpy.fromfile", "os.path.exists", "os.path.isfile", "os.path.isdir", "os.path.getsize", "os.stat",
    "tensorflow.io.gfile.GFile", "tensorflow.io.gfile.exists", "tensorflow.io.gfile.isdir",
    "tensorflow.gfile.GFile", "tensorflow.gfile.Exists", "pandas.read_csv", "pandas.read_json",
    "pandas.read_parquet", "h5py.File", "torch.load"})
# The same on a path or filesystem object (pathlib, etils.epath, fsspec: `Path(p).read_text()`,
# `fs.open(p)`, `fs.exists(p)`), of a receiver not of a project class.
FILE_READ_METHODS = frozenset({"open", "read_text", "read_bytes", "exists", "is_file", "is_dir", "isfile",
                               "isdir"})
# Builtins whose result carries what their arguments do (numbers and containers made from them).
PASSTHROUGH_BUILTINS = frozenset({"len", "int", "float", "str", "bool", "abs", "round", "repr", "format", "divmod",
                                  "pow", "list", "tuple", "dict", "range", "reversed", "enumerate", "zip", "map",
                                  "filter", "iter", "next", "bytes", "ord", "chr", "slice", "type"})


# A dict's views: one element per key.
DICT_VIEWS = frozenset({"keys", "values", "items"})


def dict_struct_with_key(struct: str | None, key: str) -> str | None:
    """A dict's structure ("dict:a,b", `Val.struct`) after `d[key] = v` with a constant key: its
    keys and `key`, whatever the value; None where the dict's keys are not known."""
    if not struct or not struct.startswith("dict:"):
        return None
    keys = [k for k in struct[len("dict:"):].split(",") if k]
    return "dict:" + ",".join(sorted(set(keys) | {key}))


def struct_fixes_count(struct: str | None) -> bool:
    """Whether a structure (`Val.struct`) fixes how many elements the value holds: a dict of known
    keys ("dict:a,b"), a tuple display ("seq:N"). "list", "dict", "set" say only what it is."""
    return bool(struct) and (struct.startswith("dict:") or struct.startswith("seq:"))


def joined_struct(a: str | None, b: str | None) -> str | None:
    """The structure (`Val.struct`) of a value that is one of two values of structures `a` and
    `b` that differ: a list either way (a list grown by `append`, "list", or the display `[]` it
    is reset to, "seq:N") is a list, whose count is its length sources alone; else not known."""
    if a == "list" and (b == "list" or (b or "").startswith("seq:")) \
            or b == "list" and (a or "").startswith("seq:"):
        return "list"
    return None


def may_add_dict_key(struct: str | None, key: str | None, indexed: bool) -> bool:
    """Whether `d[key] = v` may give a dict (`struct`, `Val.struct`) a key it did not hold: a
    known dict (not an array or list, whose item stores change values), by one index (not a
    slice), with a key that is computed or not among its known ones."""
    if not indexed or not struct or not (struct == "dict" or struct.startswith("dict:")):
        return False
    return key is None or struct == "dict" or key not in struct[len("dict:"):].split(",")


def literal_structure(node: object, read: Reader) -> str | None:
    """The pytree structure an expression has whatever it holds, as `Val.struct` names it:
    "none" for `None`, "seq:N" for a tuple display; None when the expression does not say."""
    r = read(node)
    if r == ("name", "None"):
        return "none"
    return f"seq:{len(r[1])}" if r[0] == "tuple" else None


def structures_differ(a: str | None, b: str | None) -> bool:
    """Whether values of the structures `a` and `b` (None: not known) are different pytrees: one
    is None and the other is not, or both are known and differ. A type predicate
    (`TYPE_PREDICATES`) on a value chosen between them depends on the choice."""
    return a != b and ("none" in (a, b) or bool(a and b))


def looks_like_sharding(node: object | None, read: Reader) -> bool:
    """An expression whose name says it is a sharding (`sharding`, `data_sharding`, not
    `single_device_sharding`): `jax.device_put(x, <it>)` makes a global array, a guess."""
    if node is None:
        return False
    return sharding_name(expr_name(node, read, ""))


def sharding_name(name: str) -> bool:
    """A name that says it is a sharding (`looks_like_sharding`; a parameter's too)."""
    name = name.lower()
    return "shard" in name and "single" not in name


def group_chosen_by(group: frozenset, cond: frozenset) -> bool:
    """Whether work over the devices a process-dependent value chose (`group`: the sources of a
    sharding whose devices differ by process, `Mesh(devices_of(my_slice))`) runs on exactly the
    processes where a condition on `cond` holds: every process-dependent source of the condition
    is one that chose the devices (the same source, however reached), so the processes owning
    those devices all computed the same choice and take the branch together (`if my_slice ==
    restoring: device_put(x, slice_sharding)`, `if my_group in holders: ...`). False where the
    devices are the same everywhere (no sources) or the condition reads anything else."""
    if not group or not cond:
        return False
    # (a source from another function is known by where it is, `origin`: its line and column
    # here are where it entered this file, which differ between the two ways it came)
    key = lambda s: (s.origin, s.kind) if s.origin else (s.line, s.column, s.kind)  # noqa: E731
    same = {key(s) for s in group}
    return all(key(s) in same for s in cond)


def constant_key(node: object | None, read: Reader) -> str | None:
    """The key a subscript or `dict.get` names when it is a str literal (`cfg["steps"]`); None
    for a computed key."""
    if node is None:
        return None
    r = read(node)
    return r[1] if r[0] == "string" else None


DEVICE_COLLECTION_CALLS = {"jax.devices", "jax.local_devices"}
DEVICE_COLLECTION_ATTRS = {"devices", "device_set", "addressable_devices", "_device_assignment", "flat"}


def is_device_collection(node: object, read: Reader, qualify) -> bool:
    """`jax.devices()`, `mesh.devices.flat`, `sharding.device_set`, `x.devices()`,
    `sharding.addressable_devices`: an expression that is a collection of devices."""
    if node is None:
        return False
    r = read(node)
    if r[0] == "call":
        if (qualify(r[1]) or "") in DEVICE_COLLECTION_CALLS:
            return True
        f = read(r[1])
        return f[0] == "attr" and f[2] == "devices" and not r[2]
    return r[0] == "attr" and r[2] in DEVICE_COLLECTION_ATTRS and (r[2] != "flat" or is_device_collection(r[1], read, qualify))


def selects_one_process_devices(test: object, iterable: object, read: Reader, qualify) -> bool:
    """`d.process_index == i` (either side, a test of an `and` included) over a collection of
    devices (`is_device_collection`): a filter keeping the devices of one process (this one's:
    `jax.local_devices()` by another name). How many it keeps is that process's device count, as
    uniform as `jax.local_device_count()`, whichever process it names."""
    if not is_device_collection(iterable, read, qualify):
        return False
    r = read(test)
    if r[0] == "boolop" and r[1] == "and":
        return any(selects_one_process_devices(x, iterable, read, qualify) for x in r[2])
    if r[0] != "compare" or r[2] != "==":
        return False
    return any(read(side)[0] == "attr" and read(side)[2] == "process_index" for side in (r[1], r[3]))


def iteration_parts(node: object, read: Reader) -> list[int | None] | None:
    """Iterating `zip(a, b)` gives tuples of an element of each argument; `enumerate(x)` gives a
    counter (the same on every process at a given iteration) and an element of `x`. The position
    of the argument each tuple element comes from (None: the counter), or None for any other
    iterable."""
    r = read(node)
    if r[0] != "call":
        return None
    f = read(r[1])
    if f[0] != "name" or f[1] not in ("zip", "enumerate"):
        return None
    n = len(r[2])  # (the positional arguments; a caller checks there is no starred one)
    if not n:
        return None
    if f[1] == "enumerate":
        return [None, 0]
    return list(range(n))


def constant_repr(node: object | None, read: Reader) -> str | None:
    """A literal constant argument or default as one string both trees write alike (`False`,
    `None`, `'device'`, `3`); None for anything else (a float, a name, an expression)."""
    if node is None:
        return None
    r = read(node)
    if r[0] == "string":
        return repr(r[1])
    if r[0] == "number":
        return r[1]
    if r[0] == "name" and r[1] in ("True", "False", "None"):
        return r[1]
    if r[0] == "unary" and r[1] == "-":
        n = read(r[2])
        if n[0] == "number" and n[1] is not None and not n[1].startswith("-"):
            return "-" + n[1]  # (`pad=-1`)
    return None


# Types a literal constant's `constant_repr` tells (`isinstance(pad, str)` of a constant `pad`).
_CONSTANT_TYPES = {"str": lambda c: c[:1] in ("'", '"'), "bool": lambda c: c in ("True", "False"),
                   "int": lambda c: c in ("True", "False") or c.lstrip("-").isdigit(),
                   "float": lambda c: False, "bytes": lambda c: False,
                   "NoneType": lambda c: c == "None", "type(None)": lambda c: c == "None"}


def _constant_isinstance(c: str, types: object, read: Reader) -> bool | None:
    r = read(types)
    if r[0] == "tuple":
        vals = [_constant_isinstance(c, t, read) for t in r[1]]
        return True if True in vals else (False if all(v is False for v in vals) else None)
    name = r[1] if r[0] == "name" else ("type(None)" if r[0] == "call" and read(r[1]) == ("name", "type")
                                        and len(r[3]) == 1 and read(r[3][0]) == ("name", "None") else None)
    is_type = _CONSTANT_TYPES.get(name) if name else None
    return is_type(c) if is_type is not None else None


def may_declare(text: str) -> bool:
    """Whether a source text may hold a `global` or `nonlocal` statement: where one starts, its
    keyword (spelled out, never escaped, not the start of a longer name) stands first on a line
    (a byte-order mark before it on the first) or after the `;` or `:` that ends what precedes it
    on its line, blanks between. False only where the text holds none; a match in a string or a
    comment only costs the walk it would have saved. Both passes skip their walks for such
    statements where it is False. (Each occurrence found with `str.find`, then its surroundings
    checked: a regular expression tried at every position cost 15x as much.)"""
    for kw in ("global", "nonlocal"):
        i = text.find(kw)
        while i >= 0:
            after = text[i + len(kw):i + len(kw) + 1]
            if not (after.isalnum() or after == "_"):
                k = i - 1
                while k >= 0 and text[k] in " \t\f\ufeff":
                    k -= 1
                if k < 0 or text[k] in "\r\n;:":
                    return True
            i = text.find(kw, i + 1)
    return False


# The number of processes of the job (the same on every process).
PROCESS_COUNT_CALLS = frozenset({"jax.process_count", "jax.host_count"})


def is_process_count(e: object, read: Reader, qualify: Callable[[object], str | None],
                     named: Callable[[str], bool] | None = None,
                     member: Callable[[object, str, bool], bool] | None = None) -> bool:
    """Whether an expression is the number of processes of the job (the one definition both
    passes ask): `jax.process_count()` called with no arguments; a name that holds it (`named`:
    bound to it once and never again in its scope, a module constant so bound); an object's
    member that holds it (`member(receiver, attr, called)`: `self.size` whose every store is the
    count, a property or a method returning it, `self.world()`)."""
    r = read(e)
    if r[0] == "call":
        if r[3]:
            return False
        if qualify(r[1]) in PROCESS_COUNT_CALLS:
            return True
        f = read(r[1])
        return member is not None and f[0] == "attr" and member(f[1], f[2], True)
    if r[0] == "name":
        return named is not None and named(r[1])
    if r[0] == "attr":
        return member is not None and member(r[1], r[2], False)
    return False


def scope_counts(bound: Sequence[str], assigns: Sequence[tuple[str, object]], declared: Collection[str],
                 read: Reader, qualify: Callable[[object], str | None]) -> tuple[set[str], set[str], dict]:
    """The process-count names of one function or module scope, from what its reader found there
    (`summary._scope_bindings`, `taint._scope_bindings`: each name binding, the count repeated;
    the (name, value) of each one-target assignment, a tuple display unpacked position by
    position; the names declared `global`/`nonlocal` in it or in a nested function): (the names
    bound, those bound once and nowhere else to `jax.process_count()`, name -> the comparison each
    such name is bound once to, `sharded = world > 1`)."""
    times: dict[str, int] = {}
    for name in bound:
        times[name] = times.get(name, 0) + 1
    once = {n for n, k in times.items() if k == 1 and n not in declared}
    counts: set[str] = set()
    tests: dict[str, object] = {}
    for name, value in assigns:
        if name not in once:
            continue
        if is_process_count(value, read, qualify):
            counts.add(name)
        elif read(value)[0] == "compare":
            tests[name] = value
    return set(times), counts, tests


def process_count_test(left: object, op: str, right: object, read: Reader,
                       is_count: Callable[[object], bool]) -> bool | None:
    """Which way `count <op> n` goes in a job of several processes, the only kind in which
    processes can part ways: `process_count() == 1` / `<= 1` / `< 2` is False there, `> 1` /
    `>= 2` / `!= 1` True (`is_count`: whether an expression is the process count); None for
    anything else (`== 4` depends on the job)."""
    flip = {"<": ">", ">": "<", "<=": ">=", ">=": "<=", "==": "==", "!=": "!="}
    rn = read(right)
    if rn[0] != "number" or rn[1] is None:
        ln = read(left)
        if ln[0] != "number" or ln[1] is None or op not in flip:
            return None
        left, right, op, rn = right, left, flip[op], ln
    try:
        n = int(rn[1])
    except ValueError:
        return None
    if n > 2 or n < 0 or op not in flip or not is_count(left):
        return None
    # With count >= 2: the comparison with a number n <= 2 is decided unless it tests count == 2.
    if op == "==":
        return False if n < 2 else None
    if op == "!=":
        return True if n < 2 else None
    if op == "<":
        return False
    if op == "<=":
        return False if n < 2 else None
    if op == ">":
        return True if n < 2 else None
    return True  # ">="


def decide(test: object, read: Reader, constants: dict[str, str],
           is_count: Callable[[object], bool] | None = None,
           count_test: Callable[[str], bool | None] | None = None) -> bool | None:
    """Which way a condition goes when the parameters in `constants` (name -> `constant_repr`)
    hold those constants at every call: `flag`, `not flag`, `flag is None`, `mode == "host"`,
    `and`/`or` of those; and, with `is_count`, a comparison of the process count with 1 as in a
    job of several processes (`process_count_test`: a block that runs only in a one-process job
    cannot part processes that do not exist), with `count_test` also through a name bound to
    one (`sharded = world > 1`, `not sharded`: False there, whatever the rank tested beside it);
    None when it depends on anything else."""
    r = read(test)
    if r[0] == "name":
        c = constants.get(r[1])
        if c is None:
            return count_test(r[1]) if count_test is not None else None
        return _truthy(c)
    if r[0] == "boolop":
        vals = [decide(v, read, constants, is_count, count_test) for v in r[2]]
        if r[1] == "and":
            return False if False in vals else (True if all(v is True for v in vals) else None)
        return True if True in vals else (False if all(v is False for v in vals) else None)
    if r[0] == "unary" and r[1] == "not":
        v = decide(r[2], read, constants, is_count, count_test)
        return None if v is None else not v
    if r[0] == "call" and len(r[3]) == len(r[2]) and read(r[1])[0] == "name" and r[2] \
            and read(r[2][0])[0] == "name" and (c := constants.get(read(r[2][0])[1])) is not None:
        # `callable(pad)`, `isinstance(pad, str)` of a parameter holding a literal constant
        fn = read(r[1])[1]
        if fn == "callable" and len(r[2]) == 1:
            return False
        if fn == "isinstance" and len(r[2]) == 2:
            return _constant_isinstance(c, r[2][1], read)
        return None
    if r[0] == "compare":
        left, op, right = r[1], r[2], r[3]
        if is_count is not None:
            v = process_count_test(left, op, right, read, is_count)
            if v is not None:
                return v
        a = constants.get(read(left)[1]) if read(left)[0] == "name" else None
        b = constant_repr(right, read)
        if a is None or b is None:
            return None
        return literal_test_holds(a, op, b)
    return None


_LITERAL_TEST_OPS = ("==", "!=", "is", "is not")


def literal_test(test: object, read: Reader, names: Collection[str]) -> tuple[str, str, str] | None:
    """A comparison of one of `names` with a literal constant (`mode == "world"`, `kind !=
    'self'`, `barrier is not None`, `None is p`): (the name, the operator, the literal's
    `constant_repr`), the name on the left; None for anything else."""
    r = read(test)
    if r[0] != "compare" or r[2] not in _LITERAL_TEST_OPS:
        return None
    for name, other in ((r[1], r[3]), (r[3], r[1])):
        n = read(name)
        if n[0] == "name" and n[1] in names and (c := constant_repr(other, read)) is not None:
            return n[1], r[2], c
    return None


def _literal_value(c: str) -> object:
    import ast
    try:
        return ast.literal_eval(c)
    except (ValueError, SyntaxError):
        return _NO_VALUE


_NO_VALUE = object()


def literal_test_holds(c: str, op: str, lit: str) -> bool | None:
    """Whether `x <op> lit` holds where x holds the literal constant `c` (both `constant_repr`
    texts), as Python compares them: `==`/`!=` by value (`1 == True`, `'a' != None`); `is`/`is
    not` only against the singletons None, True and False (identity of other literals is the
    interpreter's choice); None when not known."""
    a, b = _literal_value(c), _literal_value(lit)
    if a is _NO_VALUE or b is _NO_VALUE:
        return None
    if op in ("==", "!="):
        return (a == b) == (op == "==")
    if op in ("is", "is not"):
        if not any(v is None or v is True or v is False for v in (a, b)):
            return None
        return (a is b) == (op == "is")
    return None


def _truthy(c: str) -> bool:
    return c not in ("False", "None", "0", "''", '""')


def truthy_constant(c: str) -> bool:
    """Whether a literal constant (`constant_repr`) is true."""
    return _truthy(c)


def host_params_of_traced(params: Collection[str], statics: Collection[str]) -> frozenset[str]:
    """The parameters of a function traced by `jit`/`pmap`/`shard_map` that hold host values while
    its body runs: only its static ones. The others are tracers: their content is not known at
    trace time and their shapes are the ones every process passes alike (a shape that differs is
    a finding where the function is called), so a branch or a `raise` on them inside the body
    goes the same way on every process."""
    return frozenset(p for p in params if p in statics)


# Sources whose value a traced function's body bakes into its program when it reads them at trace
# time (`jax.process_index()`, a host name, the clock, an unseeded draw, a per-process environment
# variable, a value computed from those). Process-local *data* (a shard's rows, a thread's state, a
# signal) is left out: a traced body cannot read a shard, and those are guesses of their own.
TRACE_TIME_KINDS = frozenset({kinds.PROCESS_ID, kinds.HOST_ID, kinds.CLOCK, kinds.RANDOM, kinds.ENVIRONMENT,
                              kinds.DECLARED, kinds.DERIVED})


def may_drop_reduction(q: str | None, method: str | None, name_argument: bool) -> bool:
    """Whether a call made as a statement (its result dropped) may drop what a cross-process
    reduction computed: a functional collective (`process_allgather(x)`, `lax.psum(x, ...)`), or a
    project function or method (not a generic or builtin name) given a name, `comm.reduce(total)`,
    whose result may be that name reduced. `q`: the callee's qualified name, if known."""
    if q in K.SANITIZERS:
        return True
    if not name_argument:
        return False
    if method is not None:
        return method not in K.GENERIC_METHOD_NAMES and (q is None or q.split(".")[0] not in LIBRARY_ROOTS)
    return q is not None and q.removeprefix("builtins.") not in vars(builtins) and q.split(".")[0] not in LIBRARY_ROOTS


def stored_attribute_key(name: str, attr: str) -> str:
    """The scope binding that holds what `name.attr = v` stored (a pass that tracks such stores
    keeps them beside the names; the dot keeps it apart from any name)."""
    return f"{name}.{attr}"


def is_stored_attribute_key(key: str) -> bool:
    return "." in key


_OPEN_CALLS = ("open", "io.open", "tensorflow.io.gfile.GFile")
# The last part of the name of every call `written_path` knows (a cheap test before qualifying).
WRITER_NAMES = frozenset({q.rsplit(".", 1)[-1] for q in (*K.FILE_WRITERS, *_OPEN_CALLS)} | {"write_text", "write_bytes"})


def written_path(node, qualify, read: Reader):
    """The path expression a call writes a file at, None if it writes none: a file writer's
    path argument (`knowledge.FILE_WRITERS`: `np.save(path, x)`, `shutil.copy(src, dst)`),
    `open(path, mode)` with a writing mode ("w", "a", "x"), the path a `.write_text()` /
    `.write_bytes()` is called on."""
    r = read(node)
    if r[0] != "call":
        return None
    f = read(r[1])
    if (f[1] if f[0] == "name" else f[2] if f[0] == "attr" else None) not in WRITER_NAMES:
        return None
    q = qualify(r[1])
    if q in K.FILE_WRITERS:
        pos = K.FILE_WRITERS[q]
        return r[2][pos] if len(r[2]) > pos else None
    if q in _OPEN_CALLS:
        if len(r[2]) > 1:
            mode = read(r[2][1])
            if mode[0] == "string" and isinstance(mode[1], str) and any(m in mode[1] for m in "wax"):
                return r[2][0]
        return None
    if f[0] == "attr" and f[2] in ("write_text", "write_bytes"):
        return f[1]
    return None


def agreeing_buffer(node, meth: str, parts, read: Reader):
    """The variable an mpi4py buffer collective (`comm.Allreduce(x, out)`, `comm.Bcast(buf,
    root=0)`: `knowledge.MPI_AGREEING_BUFFER_METHODS`) writes its agreeing result into: the
    receive buffer's name, or the name that leads a buffer specification (`[out, MPI.DOUBLE]`);
    None for anything else (an element, an attribute: not followed)."""
    arg = parts.argument(node, *K.MPI_AGREEING_BUFFER_METHODS[meth])
    r = read(arg) if arg is not None else None
    if r is not None and r[0] in ("seq", "tuple") and r[1]:
        arg = r[1][0]
        r = read(arg)
    return arg if r is not None and r[0] == "name" else None


def bound_within(scope, outer, name: str) -> bool:
    """Whether `name` is bound in `scope` or an enclosing scope up to `outer` (inclusive): read
    there it is no closure over a value from outside `outer`. Scopes have `env`, `outer`."""
    while scope is not None:
        if name in scope.env:
            return True
        if scope is outer:
            return False
        scope = scope.outer
    return False


def draw_of_given_size(q: str, positional: int, keywords: Collection[str]) -> bool:
    """Whether a call to `q` (`positional` arguments, these keywords) is a random draw whose size
    is given (`np.random.normal(size=(4, 8))`, `np.random.rand(3, 4)`): its values differ between
    processes, its shape does not (a size that itself differs makes a shape source elsewhere)."""
    at = K.SIZED_DRAWS.get(q)
    if at is None:
        return False
    return positional > 0 if at == -1 else (K.SIZED_DRAW_KEYWORDS.get(q, "size") in keywords or positional > at)


ENDLESS = "endless"
UNLESS_EMPTY = "unless-empty"


SYNC = "sync"  # `Val.ckpt` (the summary's "ckpt") of a checkpointer that saves synchronously


def synchronous_checkpointer(q: str, node: object, read: Reader, qualify: Qualify,
                             argument: Callable[[object, int, str], object | None]) -> bool:
    """Whether the orbax constructor call `node` (of `q`) makes a checkpointer that saves
    synchronously (`K.SYNC_CHECKPOINTERS`), or a `CheckpointManager` given only such ones
    (`checkpointers=` a dict display or `dict(...)` of their constructions, or one of them) or
    `options=CheckpointManagerOptions(..., enable_async_checkpointing=False)`: its saves are
    finished when `save` returns."""
    if q in K.SYNC_CHECKPOINTERS:
        return True
    if q not in K.CHECKPOINT_MANAGERS:
        return False

    def sync_made(e: object) -> bool:
        r = read(e)
        return r[0] == "call" and (qualify(r[1]) or "") in K.SYNC_CHECKPOINTERS

    given = argument(node, 1, "checkpointers")
    if given is not None:
        r = read(given)
        if r[0] == "dict":
            values = r[1]
        elif r[0] == "call" and qualify(r[1]) == "dict" and not r[2]:
            values = r[3]
        else:
            values = [given]
        return bool(values) and all(sync_made(v) for v in values)
    options = argument(node, 2, "options")
    if options is None or read(options)[0] != "call":
        return False
    flag = argument(options, 99, "enable_async_checkpointing")
    return flag is not None and read(flag) == ("name", "False")


def pending_wait_is_local(meth: str, ckpt: object) -> bool:
    """Whether calling `meth` of a checkpointer (its `Val.ckpt`) waits for nothing: waiting for
    pending saves of one that saves synchronously."""
    return ckpt == SYNC and meth in K.PENDING_SAVE_METHODS


def rng_size_given(meth: str, positional: int, keywords: Collection[str]) -> bool:
    """Whether a generator's draw `meth` (`K.RNG_DRAW_METHODS`; `positional` arguments, these
    keywords) is given its size (`rng.integers(lo, hi, size=4)`, `rng.rand(3, 4)`,
    `rng.choice(xs, 3)`, `random.sample(xs, k)`): it holds that many numbers."""
    at, kw = K.RNG_DRAW_METHODS[meth]
    if at is None:
        return False
    return positional > 0 if at == -1 else (kw in keywords or positional > at)


def endless_call(q: str, positional: list, every: list) -> str | None:
    """Whether a call of `q` with these arguments (`positional` ones, `every` one) makes an
    iterator that never ends: `itertools.count()`, `itertools.repeat(x)` without a count
    (`ENDLESS`); `itertools.cycle(xs)` unless xs is empty, when it ends at once (`UNLESS_EMPTY`).
    Iterated, it runs as long as the loop's own exits say on every process: its elements may be
    process-local content, their number is not (`endless`), but for an empty xs
    (`endless_unless_empty`); None for other calls."""
    if q == "itertools.repeat":
        return ENDLESS if len(every) == 1 and len(positional) == 1 else None
    if q in K.ENDLESS_ITERATORS:
        return ENDLESS
    return UNLESS_EMPTY if q in K.CYCLING_ITERATORS else None


def endless_repeat(every: list, read: Reader) -> bool:
    """`ds.repeat()` / `ds.repeat(None)` / `ds.repeat(count=None)` / `ds.repeat(-1)` (`every`: the
    arguments' values): a dataset (tf.data, grain) repeated forever. (numpy's `a.repeat(n)` needs
    its count: never called bare.)"""
    if not every:
        return True
    if len(every) != 1:
        return False
    r = read(every[0])
    return r == ("name", "None") or r[0] == "unary" and r[1] == "-" and _small_int(r[2], read) == 1


def extent_parts(expr: object, read: Reader, qualify: Qualify) -> list | None:
    """A size written from arrays' extents alone: the arrays it reads the extent of (`x.shape`,
    `x.shape[0]`, `x.size`, `len(x)`, a tuple of those and constants; each array a name or an
    attribute, so reading it again computes nothing); None for any other size."""
    r = read(expr)
    if r[0] == "tuple":
        out: list = []
        for e in r[1]:
            if read(e)[0] == "number":
                continue
            part = extent_parts(e, read, qualify)
            if part is None:
                return None
            out.extend(part)
        return out
    if r[0] == "subscript":
        r = read(r[1])
        if r[0] != "attr" or r[2] != "shape":
            return None
    if r[0] == "call" and qualify(r[1]) == "len" and len(r[3]) == 1 and len(r[2]) == 1:
        array = r[2][0]
    elif r[0] == "attr" and r[2] in SHAPE_ATTRIBUTES:
        array = r[1]
    else:
        return None
    return [array] if read(array)[0] in ("name", "attr") else None


def draw_size_arguments(q: str, node: object, positional: list, argument: Callable) -> list:
    """The arguments giving the size of a draw of a given size (`draw_of_given_size`): every
    positional one for `np.random.rand(3, 4)`, else the one at its place or keyword
    (`random.sample(xs, k)`, `np.random.normal(0, 1, size=n)`)."""
    at = K.SIZED_DRAWS[q]
    if at == -1:
        return list(positional)
    size = argument(node, at, K.SIZED_DRAW_KEYWORDS.get(q, "size"))
    return [] if size is None else [size]


def names_a_fresh_temporary(s) -> bool:
    """Whether the source `s` (a Src) is a fresh temporary file's or directory's name
    (`K.TEMP_NAME_DESCS`): it differs by process, yet no such name is empty, so whether a value
    made from it is empty does not (`if dump_path:` with a path under `tempfile.mkdtemp()`)."""
    return any(s.desc.startswith(d) for d in K.TEMP_NAME_DESCS)


def truth_of_whole(test: object, read: Reader) -> bool:
    """Whether a test takes the truth value of a whole value (`if files:`, `not files`,
    `if self.queue:`): `bool()` of it, empty or not, whatever order its elements come in (as
    `bool(files)` and `len(files)`, `K.ORDER_INSENSITIVE`). A comparison or a call is not."""
    r = read(test)
    if r[0] == "unary" and r[1] == "not":
        r = read(r[2])
    return r[0] in ("name", "attr")


def unwrapped_elements(n: object, read: Reader, qualify: Qualify) -> object:
    """The expression whose elements `n` yields, in their order, through calls that pass their
    first argument's elements through (`K.SAME_ELEMENTS_WRAPPERS`, up to 4 deep: `list(tqdm(xs))`
    is xs); `n` itself where it is no such call."""
    for _ in range(4):
        r = read(n)
        if r[0] != "call" or not r[2] or qualify(r[1]) not in K.SAME_ELEMENTS_WRAPPERS:
            break
        n = r[2][0]
    return n


def same_elements(a: object, b: object, read: Reader, qualify: Qualify, text: Callable[[object], str]) -> bool:
    """Whether two expressions give the same elements in the same order: the same expression,
    each maybe wrapped in calls that pass their first argument's elements through
    (`unwrapped_elements`: `tqdm(range(n)) if jax.process_index() == 0 else range(n)` is
    `range(n)` on every process; only the progress bar differs). `text`: an expression's code."""
    return text(unwrapped_elements(a, read, qualify)).strip() == text(unwrapped_elements(b, read, qualify)).strip()


_NEGATED_COMPARISONS = {"==": "!=", "!=": "==", "<": ">=", ">=": "<", ">": "<=", "<=": ">", "is": "is not",
                        "is not": "is"}


def same_processes_arm(first: object, arm: int, second: object, read: Reader, text: Callable[[object], str]) -> int | None:
    """Of `if second:`, the arm (0: its body, 1: its else) that runs on exactly the processes where
    arm `arm` of an earlier `if first:` ran: the same arm for the same condition, the other for its
    negation (`not c`, `==` / `!=`, `<` / `>=`, ...); None when the conditions are not so related.
    (`if jax.process_index() == 0: x = data() else: x = None`, then `if jax.process_index() != 0:
    x = np.empty(n)`: the second fills exactly where the first left None.)"""
    a, b = text(first).strip(), text(second).strip()
    if a == b:
        return arm
    ra, rb = read(first), read(second)
    if ra[0] == "unary" and ra[1] == "not" and text(ra[2]).strip() == b \
            or rb[0] == "unary" and rb[1] == "not" and text(rb[2]).strip() == a:
        return 1 - arm
    if ra[0] == "compare" and rb[0] == "compare" and _NEGATED_COMPARISONS.get(ra[2]) == rb[2] \
            and text(ra[1]).strip() == text(rb[1]).strip() and text(ra[3]).strip() == text(rb[3]).strip():
        return 1 - arm
    return None


def conjuncts(test: object, read: Reader) -> list:
    """The operands of a test's top-level `and` (nested ones flattened), else the test itself."""
    r = read(test)
    if r[0] == "boolop" and r[1] == "and":
        return [c for v in r[2] for c in conjuncts(v, read)]
    return [test]


def _contradict(a: object, b: object, read: Reader, same: Callable[[object, object], bool]) -> bool:
    """Whether two conditions cannot both hold: `x` and `not x`; a comparison and its negation
    (`x is None` / `x is not None`, `m == "a"` / `m != "a"`, `n < k` / `n >= k`); the same
    operand `==` (or `is`) two different literals of one kind (`m == "a"` / `m == "b"`)."""
    ra, rb = read(a), read(b)
    if ra[0] == "unary" and ra[1] == "not" and same(ra[2], b) or rb[0] == "unary" and rb[1] == "not" and same(rb[2], a):
        return True
    if ra[0] != "compare" or rb[0] != "compare":
        return False
    if not same(ra[1], rb[1]):
        return False
    if _NEGATED_COMPARISONS.get(ra[2]) == rb[2] and same(ra[3], rb[3]):
        return True
    if ra[2] in ("==", "is") and rb[2] in ("==", "is"):
        ca, cb = constant_repr(ra[3], read), constant_repr(rb[3], read)
        if ca is None or cb is None or ca == cb:
            return False
        kind = lambda c: "str" if c[:1] in ("'", '"') else "name" if c in ("True", "False", "None") else "int"  # noqa: E731
        # (one kind only: `1 == True`; an int and a string literal never equal, but a value
        # may compare oddly with either)
        return kind(ca) == kind(cb) and (kind(ca) != "name" or (ra[2] == rb[2] == "is"))
    return False


def excludes(test: object, earlier: object, read: Reader, same: Callable[[object, object], bool]) -> bool:
    """Whether `test` holding makes `earlier` False: a conjunct of `test` contradicts a conjunct
    of `earlier` (`_contradict`). Then in `if earlier: ... elif test: B`, B runs exactly where
    `test` holds, whatever `earlier`'s other conjuncts (`if not in_order and is_main(): log()
    elif in_order: <every rank in turn>`): the processes `earlier` parts take the arms around it."""
    mine = conjuncts(test, read)
    return any(_contradict(a, b, read, same) for b in conjuncts(earlier, read) for a in mine)


def counting_arguments(node: object, read: Reader, argument: Callable) -> tuple:
    """(start, stop, step) of a counting call, `range(...)` or `np.arange(...)`/`jnp.arange(...)`,
    positional or by keyword (`start=`, `stop=`, `step=`), None where not given: one positional
    argument with no `stop=` is the stop (`arange(n)`, `arange(n, step=2)`); `argument`: the
    pass's reader of an argument by position or keyword."""
    r = read(node)
    if r[0] != "call":
        return (None, None, None)
    npos = len(r[2])
    kw = lambda k: argument(node, 1 << 20, k)  # noqa: E731
    if npos == 1 and kw("stop") is None:
        return (kw("start"), r[2][0], kw("step"))
    return tuple(r[2][i] if i < npos else kw(k) for i, k in enumerate(("start", "stop", "step")))


def arange_length_arguments(positional: list, read: Reader, text: Callable[[object], str]) -> list:
    """The arguments of `arange(...)` (positional, as written) that decide its length: `stop`
    alone, else `start` and `stop` (the length is `stop - start`) and `step`; but only `n` (and
    `step`) when `stop` is written `start + n` (an offset window: `arange(first, first + n)` has n
    elements whatever `first` is)."""
    if len(positional) < 2:
        return list(positional)
    start, stop, rest = positional[0], positional[1], list(positional[2:])
    r = read(stop)
    if r[0] == "binop" and r[1] == "+" and text(r[3]).strip() == text(start).strip():
        return [r[2], *rest]  # (`arange(a, n + a)`)
    n = window_length(start, stop, read, lambda a, b: text(a).strip() == text(b).strip())
    return [start, stop, *rest] if n is None else [n, *rest]  # (`arange(a * n, (a + 1) * n)`: n long)


def random_content_argument(q: str, key: int | str) -> bool:
    """Whether the argument `key` (a position or a keyword) of a call to `q` decides only the
    values of its result, not its shape: a `jax.random` function's key (`normal(key, shape)`: a
    key from `fold_in(key, jax.process_index())` gives each process other numbers of one shape),
    and every argument of those that make or fold keys. A process-dependent one makes
    process-local content (`pdc`), not a process-dependent shape or count."""
    if not q.startswith(K.JAX_RANDOM_PREFIX):
        return False
    return q in K.JAX_RANDOM_ALL_CONTENT or key in (0, "key")


# Attributes that describe an array's shape and type, not its content: of numbers drawn into a
# given shape (`kinds.DRAWN`) they are the same on every process (`shape_of_drawn`).
SHAPE_ATTRIBUTES = frozenset({"shape", "ndim", "size", "dtype"})


def as_size(pd: frozenset, pdc: frozenset) -> frozenset:
    """The sources that make a value differ when it is used as a size or a count: process-dependent
    values, and drawn numbers (`kinds.DRAWN`: a draw has a uniform shape, but its numbers differ,
    so a random crop length from a per-process key is a shape of this process's own)."""
    drawn = frozenset(s for s in pdc if s.kind == kinds.DRAWN)
    return pd | drawn if drawn else pd


# Conversions whose result has the length of their argument (`np.asarray(x)` is len(x) long).
LENGTH_KEEPING_CONVERSIONS = ("np.asarray", "np.array", "numpy.asarray", "numpy.array", "jnp.asarray", "jnp.array",
                              "list", "tuple")


# What a call does to an array's first axis when that axis counts a container's elements whose
# number differs between processes (`np.asarray(kept)`: `kinds.ROWS`), `rows_after`:
# "rows" keeps it there (a conversion, a stack along axis 0, an elementwise or unknown call,
# `x.reshape(-1, 8)`, `x.dot(w)`), "moved" may put it on any axis (`np.transpose`, `x.T`,
# `x.reshape(8, -1)`, a flattening: the shape differs, not as rows), "dropped" reduces it away
# (`np.mean(x, axis=0)`, `x.sum()`: the result's shape is the same everywhere); "joined": a join
# along another axis than the first (`np.hstack`, `np.column_stack`) keeps its input arrays' rows
# as the result's rows, and moves a number of pieces joined ("joined?": `np.concatenate(xs,
# axis=1)`, whose pieces' count a later reduction over that axis removes: "stacked").
ROW_KEEPING_STACKS = frozenset({"numpy.stack", "numpy.vstack", "numpy.concatenate", "jax.numpy.stack",
                                "jax.numpy.vstack", "jax.numpy.concatenate"})
AXIS_MOVING_FUNCTIONS = frozenset({"transpose", "swapaxes", "moveaxis", "rollaxis", "rot90", "ravel",
                                   "dstack", "einsum"})
AXIS_MOVING_METHODS = frozenset({"transpose", "swapaxes", "ravel", "flatten", "squeeze", "permute", "t"})
AXIS_MOVING_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "flat"})
REDUCTIONS = frozenset({"sum", "mean", "max", "min", "std", "var", "prod", "any", "all", "median", "average",
                        "argmax", "argmin", "count_nonzero", "nansum", "nanmean", "nanmax", "nanmin", "amax",
                        "amin", "ptp", "norm"})


def rows_after(name: str | None, method: str | None, positional: int, keywords: Collection[str],
               axis: int | None | str, reshape_first: int | None) -> str:
    """What a call of `name` (or, where None, of the method `method`) does to its argument's
    count of rows ("rows", "moved", "dropped", "joined", "joined?", above; "padded": `np.pad`, rows kept as a guess;
    "stacked": a stack along another axis, moved as a guess). `axis`: the constant `axis` it reduces
    or stacks along (None when not given, "?" when not a constant); `reshape_first`: the first
    dimension a reshape is given, when a constant."""
    numpy = name is not None and name.startswith(("numpy.", "jax.numpy."))
    fn = name.rsplit(".", 1)[-1] if numpy else method
    if fn is None or (name is not None and not numpy):
        return "rows"  # (`ds.batch(8)`, `torch.tensor(rows)`: as many rows)
    if fn in REDUCTIONS:
        return "dropped" if axis is None or axis == 0 else "rows"
    if numpy and fn == "pad":
        return "padded"  # (rows added: a window `[:K]` of it may hold K rows everywhere)
    if fn == "reshape":
        return "rows" if reshape_first == -1 else "moved"
    if numpy and fn in ("hstack", "column_stack"):
        return "joined"
    if numpy and fn == "concatenate" and isinstance(axis, int) and axis != 0:
        return "joined?"
    if numpy and name in ROW_KEEPING_STACKS:
        # (along another axis the count is that axis: a reduction over it, `kv.sum(axis=(1, 2))`
        # of heads stacked on axis 1, removes it, which axes are not followed to see: a guess)
        return "rows" if axis in (None, 0) else "stacked"
    if fn in (AXIS_MOVING_FUNCTIONS if numpy else AXIS_MOVING_METHODS):
        return "moved"
    return "rows"


def converted_from(code: str) -> str | None:
    """For the source text of a length-keeping conversion of one argument (`np.asarray(x)`): the
    argument's text (`x`); else None. Padding `np.asarray(x)` by `K - len(x)` pads it to K."""
    head, sep, rest = code.partition("(")
    if not sep or head.strip() not in LENGTH_KEEPING_CONVERSIONS or not rest.endswith(")"):
        return None
    inner = rest[:-1].strip()
    depth = 0
    for ch in inner:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if depth < 0 or (ch == "," and depth == 0):
            return None
    return inner or None


def shape_keeps(kind: str) -> bool:
    """Whether a process-local content source of this kind reaches the array's shape attributes:
    all but drawn numbers (a shard read from a file may be short; a draw's shape is its size)."""
    return kind != kinds.DRAWN


BUILTIN_EXCEPTIONS: dict[str, type] = {n: c for n, c in vars(builtins).items()
                                        if isinstance(c, type) and issubclass(c, BaseException)}


def _builtin_exception(q: str | None) -> type | None:
    return BUILTIN_EXCEPTIONS.get(q.removeprefix("builtins.")) if q else None


def handler_may_catch(caught: list[str | None] | None, raised: str | None, from_library: bool,
                      ancestry: Callable[[str], list[str] | None]) -> bool:
    """Whether `except <caught>` can catch what a statement raises (else the handler is no path
    that statement's exception takes).

    `caught`: the handler's types as qualified names (None: a bare `except`; a None entry: a type
    expression not resolved). `raised`: the raised class's qualified name when known (`raise
    X(...)`; `next()` on an exhausted iterator raises `StopIteration`), else None. `from_library`:
    the statement is a call into code outside the project, which cannot raise the project's own
    exception classes. `ancestry(q)`: a project class and the names of its bases, transitively
    (None if `q` is not a project class)."""
    if caught is None:
        return True
    for h in caught:
        if h is None:
            return True
        hb = _builtin_exception(h)
        if hb is Exception or hb is BaseException:
            return True
        project_h = ancestry(h) is not None
        if raised is None:
            if not (project_h and from_library):
                return True
            continue
        rb = _builtin_exception(raised)
        if rb is not None:
            if hb is not None and issubclass(rb, hb):
                return True
            continue
        anc = ancestry(raised)
        if anc is None:  # a library class: unknown bases, but never a subclass of a project class
            if not project_h:
                return True
            continue
        if h in anc:
            return True
        for b in anc:
            bb = _builtin_exception(b)
            if bb is not None and hb is not None and issubclass(bb, hb):
                return True
            if bb is None and ancestry(b) is None and not project_h:
                return True  # a library base: it may derive from what is caught
    return False


def handler_surely_catches(caught: list[str | None] | None, raised: str | None,
                           ancestry: Callable[[str], list[str] | None]) -> bool:
    """Whether `except <caught>` catches what a statement raises *for certain*: a bare `except`,
    `Exception`/`BaseException`, or a known raised class that is (a subclass of) a caught one.
    Where `handler_may_catch` says only that it can (an unknown raised type, a library class of
    unknown bases), the catch is a guess (evidence.UNMATCHED_EXCEPTION)."""
    if caught is None:
        return True
    for h in caught:
        hb = _builtin_exception(h)
        if hb is Exception or hb is BaseException:
            return True
        if raised is None or h is None:
            continue
        rb = _builtin_exception(raised)
        if rb is not None and hb is not None and issubclass(rb, hb):
            return True
        anc = ancestry(raised)
        if anc is not None and (h in anc or any(
                (bb := _builtin_exception(b)) is not None and hb is not None and issubclass(bb, hb) for b in anc)):
            return True
    return False


# Calls that touch files, by their last name (a file's or path's method, `np.load`, `json.dump`,
# `tf.io.gfile.GFile`): they fail with an OSError when a path is missing, unreadable or unwritable.
_FILE_CALL_NAMES = frozenset({
    "open", "load", "loads", "read", "read_text", "read_bytes", "write_text", "write_bytes", "dump",
    "save", "savez", "savetxt", "loadtxt", "remove", "unlink", "rmtree", "makedirs", "mkdir", "rename",
    "replace", "copy", "copyfile", "copytree", "move", "listdir", "scandir", "stat", "rmdir", "GFile"})
IO_FAILURE = "OSError"  # the family of what a failing file call raises


@dataclass(frozen=True)
class Raised:
    """What a failing call raises: an instance of `family` *or of any subclass of it* (a file
    call raises some OSError: FileNotFoundError for a missing path, PermissionError for an
    unwritable one, ...). `only`: it fails in no other way (`open()`, an `os.*` call); a call
    known only to touch files (`np.load`, a file's `.read()`) may also fail on what it reads."""

    family: str
    only: bool = True


def raised_by_call(name: str | None, next_on_local_data: bool) -> Raised | None:
    """What a call raises when it fails, where known: `next()` on process-local data raises
    StopIteration when exhausted; `open()` and os/shutil/pathlib calls raise an OSError, and
    any other call that touches files may."""
    if next_on_local_data:
        return Raised("StopIteration")
    if not name:
        return None
    if name in ("open", "io.open") or name.startswith(("os.", "shutil.", "pathlib.")):
        return Raised(IO_FAILURE)
    if name.rsplit(".", 1)[-1] in _FILE_CALL_NAMES:
        return Raised(IO_FAILURE, only=False)
    return None


def fails_with_io_error(name: str | None) -> bool:
    """Whether a call can fail with an OSError, a missing or unwritable file (by the call's last
    name: `ckpt.save(...)`, `np.load(...)`, `os.makedirs(...)`)."""
    return bool(name) and name.rsplit(".", 1)[-1] in _FILE_CALL_NAMES


def handler_may_catch_family(caught: list[str | None] | None, family: str) -> bool:
    """Whether `except <caught>` catches a failure known by its family alone (`Raised`): a bare
    `except`, a builtin superclass of `family`, or a builtin subclass of it, which the failure may
    be (`except FileNotFoundError` catches an `open()` of a missing file). A type not resolved,
    or a library class of unknown bases, is not counted: nothing says it catches the failure."""
    if caught is None:
        return True
    root = _builtin_exception(family)
    if root is None:
        return False
    return any((hb := _builtin_exception(h)) is not None and (issubclass(root, hb) or issubclass(hb, root))
               for h in caught)




# Builtin constructors that never return None.
_VALUE_BUILTINS = frozenset({"list", "dict", "tuple", "set", "frozenset", "int", "float", "str", "bool", "bytes",
                             "len", "range", "sorted"})


def never_none(node: object, read: Reader, qualify: Callable[[object], str | None]) -> bool:
    """An expression whose value is never None: a literal, a display or comprehension,
    arithmetic, a builtin constructor, or a numpy/jax call (they return arrays). After `if x is
    None: x = <such>`, x is not None on any path (a placeholder the followers make)."""
    r = read(node)
    if r[0] in ("number", "string", "text", "seq", "tuple", "comp", "binop", "dict"):
        return True
    if r[0] == "other":
        return r[1] in ("dict", "dictcomp")
    if r[0] == "call":
        q = qualify(r[1])
        return q is not None and (q in _VALUE_BUILTINS or q.startswith(("numpy.", "jax.")))
    return False


def jit_runs_locally(keywords: Collection[tuple[str | None, object]], read: Reader, qualify: Qualify) -> bool:
    """`jax.jit(f, backend="cpu")`: compiled for this host's CPU device alone, whatever devices
    the job spans; `jax.jit(f, device=jax.local_devices()[0])`: for that one device of its own;
    `jax.pmap(f, devices=jax.local_devices())`: over a mesh of exactly the devices given, this
    process's own. Calling it is no cross-process work. `keywords`: a call's (name, value)."""
    return any((k == "backend" and read(v) == ("string", "cpu"))
               or (k == "device" and read(v)[0] == "subscript" and _local_device_list(v, read, qualify))
               or (k == "devices" and _local_device_list(v, read, qualify)) for k, v in keywords)


def _local_device_list(node: object, read: Reader, qualify: Qualify) -> bool:
    """`jax.local_devices()`, or a slice or item of it: devices of this process only (given no
    arguments: `jax.local_devices(process_index=p)` gives process p's, whoever asks)."""
    r = read(node)
    if r[0] == "subscript":
        r = read(r[1])
    return r[0] == "call" and qualify(r[1]) == "jax.local_devices" and not r[3]


def is_test_module(path: str) -> bool:
    """A module pytest collects tests from: `test_*.py`, `*_test.py`, or a `conftest.py`."""
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    return base == "conftest.py" or (base.endswith(".py") and (base.startswith("test_") or base.endswith("_test.py")))


def fixture_param_source(param: str, qualname: str, module: str, cls: str | None, decorators: Collection[str],
                         path: str) -> str | None:
    """How a parameter differs between processes when pytest fills it with a per-process fixture
    (`K.PROCESS_DEPENDENT_FIXTURES`), None otherwise. pytest fills the parameters of a fixture
    (`@pytest.fixture`, `@pytest.fixture(...)`: `decorators` are the qualified names, a call's
    function) and of what it collects from a test module: a module-level `test*` function, a
    `test*` method of a module-level `Test*` class. Elsewhere the same name is an ordinary
    parameter, as the caller passes it."""
    desc = K.PROCESS_DEPENDENT_FIXTURES.get(param)
    if desc is None:
        return None
    if any(d in K.PYTEST_FIXTURE_DECORATORS for d in decorators):
        return desc
    owner, _, name = qualname.rpartition(".")
    if not name.startswith("test") or not is_test_module(path):
        return None
    if owner == module:
        return desc
    if cls is not None and owner == cls and cls.rpartition(".")[0] == module and cls.rpartition(".")[2].startswith("Test"):
        return desc
    return None


def expr_name(node: object | None, read: Reader, none: str) -> str:
    """A short readable name of an expression for messages: `a.b`, `f(...)`, `lambda`; `none`
    when there is no expression."""
    if node is None:
        return none
    r = read(node)
    if r[0] == "name":
        return r[1]
    if r[0] == "attr":
        return f"{expr_name(r[1], read, none)}.{r[2]}"
    if r[0] == "call":
        return expr_name(r[1], read, none) + "(...)"
    if r[0] == "lambda":
        return "lambda"
    return type(node).__name__.lower()  # (the tree's own node type)


def none_test(test: object, read: Reader) -> tuple[str | None, bool]:
    """(`x`, True) for `x is None`, (`x`, False) for `x is not None`, else (None, False)."""
    r = read(test)
    if r[0] == "compare" and r[2] in ("is", "is not"):
        left = read(r[1])
        if left[0] == "name" and read(r[3]) == ("name", "None"):
            return left[1], r[2] == "is"
    return None, False


def qualname(name: str, module: str, cls: str | None, function: str | None) -> str:
    """The qualified name a `def` or `class` named `name` gets: `cls`, the class whose body it
    is directly in; else `function`, the function it is nested in; else the module's name."""
    if cls is not None:
        return f"{cls}.{name}"
    return f"{function or module}.{name}"


MUTATORS = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "extendleft", "setdefault"})
# Methods that take elements out of a list, dict, set or deque: a write too (`removed`).
REMOVERS = frozenset({"pop", "popitem", "remove", "discard", "popleft"})  # (not `clear`: an Event's too)
# Mutators that add their argument as one element (the others add the elements of an iterable).
ELEMENT_ADDERS = frozenset({"append", "add", "insert", "appendleft"})


# Methods of a container that give one of its elements, or a view of them (`Val.ecls`).
ELEMENT_READS = frozenset({"get", "setdefault", "pop", "values", "copy"})

# Mutators that store one element, and the position of its argument (`d.setdefault(k, v)`).
_ELEMENT_AT = {"append": 0, "appendleft": 0, "add": 0, "insert": 1, "setdefault": 1}


def stored_element(meth: str, args: list):
    """The value a mutator `meth` stores as one element (`xs.append(v)`, `d.setdefault(k, v)`),
    from its arguments as (position or keyword, value) pairs; None for the others."""
    at = _ELEMENT_AT.get(meth)
    if at is None:
        return None
    for k, v in args:
        if k == at or (meth == "setdefault" and k == "default"):
            return v
    return None


def container_root(e: object, read: Reader) -> object:
    """The container an element of `e` lives in: `groups` for `groups[k][i]`, `e` itself otherwise."""
    r = read(e)
    while r[0] == "subscript":
        e = r[1]
        r = read(e)
    return e


def lookup_local(scope, name: str):
    """The value of a function-local name, or of an enclosing function's (closures); None for
    module-level names, which each pass reads from its module scope. `scope` has `env`,
    `outer` and `is_module`."""
    while scope is not None and not scope.is_module:
        if name in scope.env:
            return scope.env[name]
        scope = scope.outer
    return None


def lookup(scope, module_env: dict, name: str):
    """A name's value where it is read: the innermost function scope that binds it, else the module."""
    v = lookup_local(scope, name)
    return module_env.get(name) if v is None else v


def note_string_binding(scope, target: object, value: object, read: Reader) -> None:
    """An assignment `name = value` in `scope` (it has `strings`): a name assigned once, to a str
    literal, holds that string; to a tuple, list or set display of str literals (`FLAGS =
    ("XLA_FLAGS", "RANK")`), those strings; assigned again, it holds no known string."""
    t = read(target)
    if t[0] in ("tuple", "seq"):
        for e in t[1]:  # (`a, b = ...`: whatever each held before, nothing known now)
            if read(e)[0] == "name":
                _bind_strings(scope, read(e)[1], None)
                forget_sized(scope, read(e)[1])
        return
    if t[0] != "name":
        return
    note_sized(scope, target, value, read)
    known = _strings(value, read)
    if known is None and equal_length_rows(value, read):
        known = EqualRows(len(read(read(value)[1][0])[1]))  # (`STEPS = {0: [96, 200], 1: [128, 120]}`)
    if known is None:
        kind = read(value)[0]
        if kind == "binop":
            known = Arithmetic((value,))  # (`start = rank * total // world`: `bound_arithmetic`)
        elif kind == "call":
            known = Called((value,))  # (`fill = np.zeros((K - len(x), d))`: `bound_call`)
        elif kind == "compare":
            known = Compared((value,))  # (`keep = scores > t`: `bound_expression`)
        elif kind == "unary" and read(value)[1] == "-":
            known = Arithmetic((value,))  # (`per = -(-n // world)`: `ceiling_division`)
        elif kind == "comp":
            known = Comprehended((value,))  # (`chunks = [x[i:i + n] for i in ...]`: `bound_comprehension`)
    _bind_strings(scope, t[1], known)


class Comprehended(tuple):
    """What a name assigned once to a comprehension holds (`chunks = [x[i:i + n] for i in
    range(0, len(x), n)]`): that comprehension, as written (its one element), for the forms read
    through names (`StatementRules.short_windows`). Assigned again, nothing known (`_bind_strings`)."""


def bound_comprehension(node: object, read: Reader, scope) -> object:
    """The comprehension a name holds where it is read (`Comprehended`), else `node` itself."""
    return _bound_form(node, read, scope, Comprehended)


# The functions that round a quotient up (`math.ceil(a / b)`), by qualified name.
_CEILINGS = frozenset({"math.ceil", "numpy.ceil", "jax.numpy.ceil"})


def ceiling_division(node: object, read: Reader, qualify: Callable[[object], str | None], scope) -> bool:
    """Whether `node` (or the arithmetic or call a name assigned once holds: `bound_expression`)
    rounds a quotient up: `math.ceil(a / b)` (numpy's too, `int(...)` of either), `-(-a // b)`,
    `-(a // -b)`, `(a + b - 1) // b`. Pieces that long cover a whole of a elements with the last
    one short (or past the end, empty) unless b divides a."""
    r = read(bound_expression(node, read, scope))
    if r[0] == "call" and read(r[1]) == ("name", "int") and len(r[2]) == 1:
        r = read(r[2][0])
    if r[0] == "call" and len(r[2]) == 1 and qualify(r[1]) in _CEILINGS:
        return read(r[2][0])[0] == "binop" and read(r[2][0])[1] == "/"
    if r[0] == "unary" and r[1] == "-":
        q = read(r[2])
        return q[0] == "binop" and q[1] == "//" and any(read(x)[0] == "unary" and read(x)[1] == "-" for x in q[2:4])
    if r[0] == "binop" and r[1] == "//":
        top = read(r[2])
        if top[0] == "binop" and top[1] == "-" and _small_int(top[3], read) == 1:
            return read(top[2])[0] == "binop" and read(top[2])[1] == "+"
        if top[0] == "binop" and top[1] == "+":
            return any(read(x)[0] == "binop" and read(x)[1] == "-" and _small_int(read(x)[3], read) == 1
                       for x in top[2:4])
    return False


class EqualRows(int):
    """What a name assigned once to a display of rows of one length holds (`equal_length_rows`:
    `STEPS = {0: [96, 200], 1: [128, 120]}`, a module's table): that many elements in whichever
    row an index picks. Assigned again (to anything else), nothing known (`_bind_strings`)."""


def bound_equal_rows(node: object, read: Reader, scope, declared_global: Callable[[str], bool]) -> bool:
    """Whether `node` is a name that holds a display of rows of one length (`EqualRows`) in the
    innermost scope that binds it, the module's included, and that no function declares `global`
    (`declared_global`: it may bind the name again to anything, when it runs)."""
    r = read(node)
    return r[0] == "name" and type(_bound_strings(r[1], scope)) is EqualRows and not declared_global(r[1])


class Arithmetic(tuple):
    """What a name assigned once to arithmetic holds (`start = rank * total // world`): that
    expression, as written (its one element), for the forms read through names
    (`even_split_window`). Assigned again, nothing known (`_bind_strings`)."""


def _bound_form(node: object, read: Reader, scope, form: type) -> object:
    """The expression a name assigned once holds where it is read, when it was recorded as
    `form` (`Arithmetic`, `Called`), else `node` itself."""
    r = read(node)
    if r[0] == "name":
        known = _bound_strings(r[1], scope)
        if type(known) is form:
            return known[0]
    return node


def bound_arithmetic(node: object, read: Reader, scope) -> object:
    """The arithmetic a name holds where it is read (`Arithmetic`), else `node` itself."""
    return _bound_form(node, read, scope, Arithmetic)


class Called(tuple):
    """What a name assigned once to a call holds (`fill = np.zeros((K - len(x), d))`): that call,
    as written (its one element), for the forms read through names (`padded_concatenation`).
    Assigned again, nothing known (`_bind_strings`)."""


def bound_call(node: object, read: Reader, scope) -> object:
    """The call a name holds where it is read (`Called`), else `node` itself."""
    return _bound_form(node, read, scope, Called)


class Compared(tuple):
    """What a name assigned once to a comparison holds (`keep = scores > t`): that comparison,
    as written (its one element), for the forms read through names (`boolean_mask`). Assigned
    again, nothing known (`_bind_strings`)."""


def bound_expression(node: object, read: Reader, scope) -> object:
    """The arithmetic, call or comparison a name assigned once holds where it is read
    (`Arithmetic`, `Called`, `Compared`), else `node` itself."""
    r = read(node)
    if r[0] == "name":
        known = _bound_strings(r[1], scope)
        if type(known) in (Arithmetic, Called, Compared):
            return known[0]
    return node


# The array constructors a padding is made with, by the end of their qualified name.
PADDING_CONSTRUCTORS = (".zeros", ".ones", ".full", ".empty")
_LENGTH_KEEPING_QUALIFIED = frozenset({"numpy.asarray", "numpy.array", "jax.numpy.asarray", "jax.numpy.array",
                                       "list", "tuple"})


def measures(e: object, x: object, read: Reader, same: Callable[[object, object], bool],
             qualify: Callable[[object], str | None]) -> bool:
    """Whether `e` is the length of `x` along its first axis: `len(x)`, `x.shape[i]` or `x.size`,
    where `x` may also be written as a conversion keeping its length (`np.asarray(y)`, measured
    as `len(y)`: `LENGTH_KEEPING_CONVERSIONS`)."""
    r = read(e)
    if r[0] == "call" and read(r[1]) == ("name", "len") and len(r[2]) == 1:
        measured = r[2][0]
    elif r[0] == "subscript" and read(r[1])[0] == "attr" and read(r[1])[2] == "shape":
        measured = read(r[1])[1]
    elif r[0] == "attr" and r[2] == "size":
        measured = r[1]
    else:
        return False
    if same(measured, x):
        return True
    c = read(x)
    return c[0] == "call" and len(c[2]) == 1 and len(c[3]) == 1 and qualify(c[1]) in _LENGTH_KEEPING_QUALIFIED \
        and same(measured, c[2][0])


def padded_concatenation(node: object, read: Reader, same: Callable[[object, object], bool],
                         qualify: Callable[[object], str | None], argument: Callable, scope) -> tuple | None:
    """Where `node`, a concatenation along the first axis (`K.CONCATENATES`), joins a part x with
    a padding of `K - len(x)` rows (`np.concatenate([x, np.zeros((K - len(x), d))])`, the padding
    written in place or a name assigned once to it, `bound_call`, its count too: `pad = K -
    len(x)`, `bound_arithmetic`): (x, the padding as written in
    the display, the expressions that decide the result's shape: K and the padding's other
    dimensions). The result holds K rows whatever x held. None otherwise."""
    r = read(node)
    if not r[2]:
        return None
    seq = read(r[2][0])
    if seq[0] not in ("seq", "tuple"):
        return None
    parts = [e for e in seq[1] if type(e).__name__ not in ("Starred", "StarredElement")]
    if len(parts) < 2:
        return None
    for pad in parts:
        call = bound_call(pad, read, scope)
        c = read(call)
        if c[0] != "call":
            continue
        q = qualify(c[1])
        if q not in K.SHAPE_CONSTRUCTORS or not q.endswith(PADDING_CONSTRUCTORS):
            continue
        width = argument(call, 0, "shape")
        if width is None:
            continue
        w = read(width)
        dims = list(w[1]) if w[0] in ("tuple", "seq") else [width]
        for x in parts:
            if x is pad:
                continue
            sizes, found = [], False
            for d in dims:
                b = read(bound_arithmetic(d, read, scope))  # (`pad = K - len(x)`, `zeros((pad, d))`)
                if b[0] == "binop" and b[1] == "-" and measures(b[3], x, read, same, qualify):
                    found = True
                    sizes.append(b[2])
                else:
                    sizes.append(d)
            if found:
                return x, pad, sizes
    return None


def even_split_window(lower: object | None, upper: object | None, read: Reader,
                      same: Callable[[object, object], bool]) -> tuple | None:
    """(a, m, n) where `lower:upper` is `a * m // n:(a + 1) * m // n` (either factor order, `1 + a`
    too): the a-th of n consecutive pieces of m elements cut at floor(k * m / n), whose lengths
    are floor(m / n) or one more, and differ only where m is no multiple of n (a process's piece
    of `np.array_split`, `equal_pieces`). None otherwise."""
    if lower is None or upper is None:
        return None
    lo, up = read(lower), read(upper)
    if lo[0] != "binop" or up[0] != "binop" or lo[1] != "//" or up[1] != "//" or not same(lo[3], up[3]):
        return None
    lp, upp = read(lo[2]), read(up[2])
    if lp[0] != "binop" or upp[0] != "binop" or lp[1] != "*" or upp[1] != "*":
        return None
    for a, m in ((lp[2], lp[3]), (lp[3], lp[2])):
        for a1, m1 in ((upp[2], upp[3]), (upp[3], upp[2])):
            s = read(a1)
            if same(m1, m) and s[0] == "binop" and s[1] == "+" and (
                    same(s[2], a) and _small_int(s[3], read) == 1 or same(s[3], a) and _small_int(s[2], read) == 1):
                return a, m, lo[3]
    return None


def plain_operand(node: object, read: Reader, qualify: Callable[[object], str | None], depth: int = 0) -> bool:
    """Whether `node` can be read again where another expression uses it, with nothing done: a
    number, a name, an attribute or element of one, or a call that gives one process the same
    value each time (`K.STABLE_CALLS`: `len(xs)`, `jax.process_count()`) of such operands."""
    r = read(node)
    if r[0] in ("number", "name"):
        return True
    if r[0] in ("attr", "subscript"):  # (`self.total`, `rows.shape[0]`)
        return depth < 4 and plain_operand(r[1], read, qualify, depth + 1)
    if r[0] == "call" and depth < 4 and len(r[2]) == len(r[3]) and qualify(r[1]) in K.STABLE_CALLS:
        return all(plain_operand(x, read, qualify, depth + 1) for x in r[2])
    return False


class OneOf(tuple):
    """What a loop variable over known strings holds: one of them (a plain tuple is a collection
    of strings, held whole)."""


def note_loop_strings(scope, target: object, iterable: object, read: Reader) -> None:
    """A loop `for name in it` (or a comprehension's): where `it` is a collection of known
    strings (a display of str literals, a name bound once to one), name holds one of them."""
    t = read(target)
    for e in (t[1] if t[0] in ("tuple", "seq") else [target] if t[0] == "name" else ()):
        if read(e)[0] == "name":
            forget_sized(scope, read(e)[1])  # (rebound by the loop: no longer what made it)
    if t[0] != "name":
        return
    r = read(iterable)
    known = _bound_strings(r[1], scope) if r[0] == "name" else _strings(iterable, read)
    _bind_strings(scope, t[1], OneOf(known) if type(known) is tuple else None)


def _bind_strings(scope, name: str, known: object) -> None:
    """`name` holds `known` if every binding seen gives it the same strings: a statement seen
    again (a loop body evaluated twice) binds what it bound before; another value, nothing."""
    if name not in scope.strings:
        scope.strings[name] = known
    elif not (type(scope.strings[name]) is type(known) and scope.strings[name] == known):
        scope.strings[name] = None


def _strings(value: object, read: Reader) -> str | tuple[str, ...] | None:
    v = read(value)
    if v[0] == "string":
        return v[1]
    if v[0] in ("tuple", "seq") and v[1]:
        elts = [read(e) for e in v[1]]
        if all(e[0] == "string" for e in elts):
            return tuple(e[1] for e in elts)
    return None


def _bound_strings(name: str, scope) -> str | tuple[str, ...] | None:
    """What `name` holds (`note_string_binding`, `note_loop_strings`) in the innermost scope
    that binds it."""
    while scope is not None:
        if name in scope.env:
            return scope.strings.get(name)
        scope = scope.outer
    return None


def env_key(node: object, read: Reader, scope) -> str | None:
    """The environment variable a read names (`os.environ.get(key)`): a str literal, or a name
    assigned once to one (`SETTINGS_ENV = "MCJAX_GUARD_SETTINGS"`) in the innermost scope that
    binds it, the module's included; None for a computed key."""
    r = read(node)
    if r[0] == "string":
        return r[1]
    known = _bound_strings(r[1], scope) if r[0] == "name" else None
    return known if isinstance(known, str) else None


def env_keys(node: object, read: Reader, scope) -> tuple[str, ...] | None:
    """The environment variables a read may name: `env_key`'s, or each of the strings a loop
    variable takes (`for k in ("XLA_FLAGS", "RANK"): os.environ.get(k)`); None for a key
    computed otherwise."""
    key = env_key(node, read, scope)
    if key is not None:
        return (key,)
    r = read(node)
    known = _bound_strings(r[1], scope) if r[0] == "name" else None
    return tuple(known) if isinstance(known, OneOf) else None


def _small_int(node: object, read: Reader) -> int | None:
    r = read(node)
    return int(r[1]) if r[0] == "number" and r[1] is not None else None


def window_length(lower: object | None, upper: object | None, read: Reader, same: Callable[[object, object], bool]) -> object | None:
    """The expression n where `lower:upper` spans n elements whatever `lower` is: `a:a + n`, and
    the a-th of pieces n long, `a * n:(a + 1) * n` (either factor order) or `a * n:a * n + n`.
    None otherwise."""
    if lower is None or upper is None:
        return None
    r = read(upper)
    if r[0] != "binop":
        return None
    if r[1] == "+" and same(r[2], lower):
        return r[3]
    lo = read(lower)
    if r[1] == "*" and lo[0] == "binop" and lo[1] == "*":
        for a, n in ((lo[2], lo[3]), (lo[3], lo[2])):
            for a1, n1 in ((r[2], r[3]), (r[3], r[2])):
                s = read(a1)
                if same(n1, n) and s[0] == "binop" and s[1] == "+" and (
                        same(s[2], a) and _small_int(s[3], read) == 1 or same(s[3], a) and _small_int(s[2], read) == 1):
                    return n  # (`(a + 1) * n` or `(1 + a) * n`)
    return None


def equal_length_rows(node: object, read: Reader) -> bool:
    """Whether `node` is a display (a dict, list or tuple) of two or more list or tuple displays
    of constants that each hold the same number of them (`{0: [12, 8, 8], 1: [44, 8, 8]}`):
    whichever row an index picks, it holds that many elements. (A set display's duplicates count
    once, a starred element holds any number: neither makes such a row.)"""
    r = read(node)
    if r[0] not in ("dict", "seq", "tuple") or len(r[1]) < 2:
        return False
    n = None
    for row in r[1]:
        if type(row).__name__ not in ("List", "Tuple"):  # (`ast` and libcst name their displays alike)
            return False
        elems = read(row)[1]
        for e in elems:
            x = read(e)
            if x[0] == "unary" and x[1] == "-":
                x = read(x[2])
            if x[0] not in ("number", "string"):
                return False
        if n is not None and len(elems) != n:
            return False
        n = len(elems)
    return True


def strided_piece(lower: object | None, upper: object | None, step: object | None, read: Reader) -> bool:
    """`x[i::n]`: every n-th element from the i-th, the i-th of n interleaved pieces
    (`piece_of_equal_ones`); `x[i:stop:n]` too, the i-th of n pieces of `x[:stop]`, as
    `range(i, stop, n)` is of `range(stop)` (`range_counts`): the stop counts (the caller's to
    read), the start only by a guess. (`upper` is not read: any stop makes such a piece.)"""
    return piece_of_equal_ones(lower, step, read)


# What a piece's start may be read as: a process's index or rank itself (a name, an attribute, a
# call, an element), not arithmetic on one (`i * 100` is an offset, not a piece's index).
_INDEX_FORMS = frozenset({"name", "attr", "call", "subscript"})


def piece_of_equal_ones(start: object | None, step: object | None, read: Reader) -> bool:
    """`x[i::n]` or `range(i, stop, n)` with `i` read as an index and n no constant 1 or -1: with
    i a process's index and n the process count, the pieces differ in length by at most one, and
    only where the whole is no multiple of n (the data was not padded or cut to one): a guessed
    length. With a step of 1 or -1 (`x[i::1]` is `x[i:]`) or an offset start the length is i's
    for certain. (Whether the start's value is a process's index is the caller's: `equal_pieces`.)"""
    if start is None or step is None or read(start)[0] not in _INDEX_FORMS:
        return False
    st = read(step)
    if st[0] == "unary" and st[1] in ("-", "+"):
        st = read(st[2])
    return not (st[0] == "number" and str(st[1]) == "1")


# ---- the least (greatest) over the processes of a count each gathered ---------------------------
# `n = int(np.min(process_allgather(local_count)))` (the builtin `min`, `np.amin`, `jnp.min`, a
# `.min()` of the gathered array, `jax.lax.pmin`): a loop bounded by n (`zip(range(n), data)`)
# runs n times on every process whose data holds the count it gathered. The greatest (`max`,
# `.max()`, `jax.lax.pmax`) is no process's own count below: data padded up to it
# (`xs + [pad] * (K - len(xs))`) holds K elements on every process (`padded_to_greatest`).
_LEAST = frozenset({"min", "numpy.min", "numpy.amin", "jax.numpy.min", "jax.numpy.amin"})
_GREATEST = frozenset({"max", "numpy.max", "numpy.amax", "jax.numpy.max", "jax.numpy.amax"})
_EXTREMES = {"min": (_LEAST, "jax.lax.pmin"), "max": (_GREATEST, "jax.lax.pmax")}
_GATHERS = frozenset({"jax.experimental.multihost_utils.process_allgather", "jax.lax.all_gather"})
_PASS_THROUGH = frozenset({"int", "numpy.asarray", "numpy.array", "numpy.int32", "numpy.int64", "jax.device_get"})


def least_over_processes(node: object, read: Reader, qualify: Callable[[object], str | None], scope,
                         depth: int = 0) -> bool:
    """Whether the number `node` is the least over the processes of a value each gathered: a
    minimum (`_LEAST`, or the method `.min()`) of an all-gather's result (`_GATHERS`), or
    `jax.lax.pmin`; through `int(...)`, `np.asarray(...)`, `[0]`-free conversions and names
    assigned once (`bound_expression`)."""
    return extreme_over_processes(node, "min", read, qualify, scope, depth) is not None


def extreme_over_processes(node: object, which: str, read: Reader, qualify: Callable[[object], str | None],
                           scope, depth: int = 0) -> object | None:
    """What each process contributed (as written: the all-gather's argument, `pmin`'s operand)
    where the number `node` is the least (`which` "min") or greatest ("max") over the processes
    of a value each gathered: `np.min`/`np.max` (`_EXTREMES`, the builtins, the methods `.min()`
    / `.max()`) of an all-gather's result (`_GATHERS`), or `jax.lax.pmin`/`pmax`; through
    `int(...)`, `np.asarray(...)` and names assigned once (`bound_expression`). None otherwise."""
    if depth > _MULTIPLE_DEPTH:
        return None
    names, collective = _EXTREMES[which]
    r = read(bound_expression(node, read, scope))
    if r[0] != "call":
        return None
    f = read(r[1])
    if not r[2]:  # (`.min()` / `.max()` of the gathered array)
        return _gathered(f[1], read, qualify, scope, depth + 1) if f[0] == "attr" and f[2] == which else None
    q = qualify(r[1]) or ""
    if q == collective:
        return r[2][0]
    if q in _PASS_THROUGH or (f[0] == "name" and f[1] == "int"):
        return extreme_over_processes(r[2][0], which, read, qualify, scope, depth + 1) if len(r[2]) == 1 else None
    if q in names or (f[0] == "name" and f[1] == which):
        return _gathered(r[2][0], read, qualify, scope, depth + 1) if len(r[2]) == 1 else None
    return None


def _gathered(node: object, read: Reader, qualify, scope, depth: int) -> object | None:
    """What each process contributed (the all-gather's argument, as written) where `node` is an
    all-gather's result (through conversions and names assigned once), else None."""
    if depth > _MULTIPLE_DEPTH:
        return None
    r = read(bound_expression(node, read, scope))
    if r[0] != "call":
        return None
    q = qualify(r[1]) or ""
    if q in _GATHERS:
        return r[2][0] if r[2] else node
    if q in _PASS_THROUGH and len(r[2]) == 1:
        return _gathered(r[2][0], read, qualify, scope, depth + 1)
    f = read(r[1])
    if f[0] == "attr" and f[2] in ("reshape", "ravel", "flatten", "tolist"):
        return _gathered(f[1], read, qualify, scope, depth + 1)
    return None


def _counts_of(e: object, x: object, read: Reader, same, qualify, scope, depth: int = 0) -> bool:
    """Whether what a process contributed to a gather, `e`, is the length of x (`measures`):
    through one-argument conversions (`np.int32(len(x))`, `np.array([len(x)], np.int32)`: the
    first argument), a display of it alone (`[len(x)]`) and names assigned once."""
    if depth > _MULTIPLE_DEPTH or e is None:
        return False
    e = bound_expression(e, read, scope)
    if measures(e, x, read, same, qualify):
        return True
    r = read(e)
    if r[0] in ("seq", "tuple") and len(r[1]) == 1:
        return _counts_of(r[1][0], x, read, same, qualify, scope, depth + 1)
    if r[0] == "call" and r[2] and ((qualify(r[1]) or "") in _PASS_THROUGH or read(r[1]) == ("name", "int")):
        return _counts_of(r[2][0], x, read, same, qualify, scope, depth + 1)
    return False


def padded_count(x: object, count: object, read: Reader, same: Callable[[object, object], bool],
                 qualify: Callable[[object], str | None], scope) -> tuple[object, bool] | None:
    """Where a padding of `count` elements appended to x (`x + [pad] * count`) pads x up to K:
    count is `K - len(x)` (as written or through a name assigned once, `bound_arithmetic`).
    (K, whether K is the greatest over the processes of the lengths of x they gathered:
    `extreme_over_processes` of what `_counts_of` x.) None otherwise. Padded to such a greatest,
    no process's x is longer than K, so x padded holds K elements on every process; to a K agreed
    otherwise (a constant, ceil(n / world), process 0's count), max(len(x), K), which differs
    where some process's x is longer: a list repeated a negative number of times is empty."""
    p = read(bound_arithmetic(count, read, scope))
    if p[0] != "binop" or p[1] != "-" or not measures(p[3], x, read, same, qualify):
        return None
    contributed = extreme_over_processes(p[2], "max", read, qualify, scope)
    return p[2], contributed is not None and _counts_of(contributed, x, read, same, qualify, scope)


def repeated_display_count(node: object, read: Reader) -> object | None:
    """n in a repeated display `[pad] * n` (or `n * [pad]`, a tuple too), else None."""
    r = read(node)
    if r[0] != "binop" or r[1] != "*":
        return None
    for seq, n in ((r[2], r[3]), (r[3], r[2])):
        if type(seq).__name__ in ("List", "Tuple"):
            return n
    return None


# ---- wholes cut or padded to a multiple of n: their n interleaved pieces are equally long ------
# `x[i::n]` of a whole whose length is a multiple of n holds len(x) // n elements on every process
# (`range(i, stop, n)` too, stop a multiple of n): which ones by i, how many not at all. A sampler
# drops the remainder (`x[:len(x) // n * n]`, `x[:len(x) - len(x) % n]`), pads to a multiple
# (`np.concatenate([x, x[:per * n - len(x)]])`, `x + [pad] * (-len(x) % n)`) or counts a multiple
# (`np.arange(k * n)`) to make the pieces agree: what the pieces' lengths would differ by is gone.
_MULTIPLE_DEPTH = 4
_COUNTING = frozenset({"range", "numpy.arange", "jax.numpy.arange"})


def count_multiple(e: object, n: object, read: Reader, same: Callable[[object, object], bool], scope,
                   depth: int = 0) -> bool:
    """Whether the number `e` is a multiple of `n` by its arithmetic: n itself; a product with
    a factor that is (`len(x) // n * n`, `k * n`, `per * (n * b)`); `a - a % m` with m one; a sum
    or difference of two; `int(...)` of one; a name assigned once to such arithmetic
    (`bound_arithmetic`)."""
    if depth > _MULTIPLE_DEPTH or e is None:
        return False
    if same(e, n):
        return True
    again = lambda x: count_multiple(x, n, read, same, scope, depth + 1)  # noqa: E731
    r = read(e)
    if r[0] == "name":
        b = bound_arithmetic(e, read, scope)
        return b is not e and again(b)
    if r[0] == "call" and read(r[1]) == ("name", "int") and len(r[2]) == 1 == len(r[3]):
        return again(r[2][0])
    if r[0] != "binop":
        return False
    if r[1] == "*":
        return again(r[2]) or again(r[3])
    if r[1] == "-":
        m = read(r[3])
        if m[0] == "binop" and m[1] == "%" and same(m[2], r[2]) and again(m[3]):
            return True  # (`a - a % m`)
    if r[1] in ("+", "-"):
        return again(r[2]) and again(r[3])
    return False


def _rounded_down_length(upper: object, base: object, n: object, read: Reader, same, qualify, scope) -> bool:
    """Whether `base[:upper]` holds a multiple of n elements: upper written from base's own length
    rounded down to a multiple of n (`len(x) // m * m`, `m * (len(x) // m)`, `len(x) - len(x) % m`,
    m a multiple of n), never more than base holds."""
    u = read(bound_arithmetic(upper, read, scope))
    if u[0] != "binop" or not count_multiple(upper, n, read, same, scope):
        return False
    if u[1] == "-":
        return measures(u[2], base, read, same, qualify)
    if u[1] == "*":
        for q in (read(u[2]), read(u[3])):
            if q[0] == "binop" and q[1] == "//" and measures(q[2], base, read, same, qualify):
                return True
    return False


def _padding_length(pad: object, read: Reader, qualify, sub) -> object | None:
    """How many elements a padding holds, as written: P for `z[:P]`, `[e] * P` (either order),
    `np.zeros(P)` / `np.full((P, d), v)` (`PADDING_CONSTRUCTORS`); None otherwise."""
    r = read(pad)
    if r[0] == "subscript":
        keys = sub(pad)[1]
        if len(keys) == 1 and keys[0][0] == "slice" and keys[0][1] is None and keys[0][3] is None:
            return keys[0][2]
        return None
    if r[0] == "binop" and r[1] == "*":
        for seq, count in ((r[2], r[3]), (r[3], r[2])):
            if read(seq)[0] == "seq" and len(read(seq)[1]) == 1:
                return count
    if r[0] == "call" and r[2] and (qualify(r[1]) or "").endswith(PADDING_CONSTRUCTORS):
        w = read(r[2][0])
        return (w[1][0] if w[1] else None) if w[0] in ("tuple", "seq") else r[2][0]
    return None


def _pads_to_multiple(x: object, pad: object, n: object, read: Reader, same, qualify, sub, scope) -> bool:
    """Whether `pad` pads x to a multiple of n: its length is `T - len(x)` (T a multiple of n,
    `math.ceil(len(x) / n) * n`) or `-len(x) % m` (m a multiple of n)."""
    p = _padding_length(pad, read, qualify, sub)
    if p is None:
        return False
    r = read(bound_arithmetic(p, read, scope))
    if r[0] == "binop" and r[1] == "-" and measures(r[3], x, read, same, qualify):
        return count_multiple(r[2], n, read, same, scope)
    if r[0] == "binop" and r[1] == "%" and count_multiple(r[3], n, read, same, scope):
        neg = read(r[2])
        return neg[0] == "unary" and neg[1] == "-" and measures(neg[2], x, read, same, qualify)
    return False


def length_multiple(x: object, n: object, read: Reader, same: Callable[[object, object], bool],
                    qualify: Callable[[object], str | None], sub: Callable[[object], tuple], scope,
                    depth: int = 0) -> bool:
    """Whether the sequence `x` holds a multiple of n elements by how it was made: a window cut
    from its own length rounded down (`_rounded_down_length`), `range(k * n)` / `np.arange(k *
    n)`, a concatenation (`np.concatenate([x, pad])`, `x + pad`) whose padding pads to a multiple
    (`_pads_to_multiple`), or a name whose last assignment in this scope is one (`note_sized`)."""
    if depth > _MULTIPLE_DEPTH:
        return False
    r = read(x)
    if r[0] == "name":
        made = _sized(r[1], scope)
        if type(made) is MadeEither:
            return all(length_multiple(m, n, read, same, qualify, sub, scope, depth + 1) for m in made)
        return made is not None and length_multiple(made, n, read, same, qualify, sub, scope, depth + 1)
    if r[0] == "subscript":
        base, keys = sub(x)
        if len(keys) != 1 or keys[0][0] != "slice":
            return False
        _, lower, upper, step = keys[0]
        if step is None and upper is not None and (lower is None or _small_int(lower, read) == 0):
            return _rounded_down_length(upper, base, n, read, same, qualify, scope)
        return False
    if r[0] == "call":
        q = qualify(r[1]) or ""
        if q in _COUNTING and len(r[2]) == 1 == len(r[3]):
            return count_multiple(r[2][0], n, read, same, scope)
        if q in K.CONCATENATES and r[2]:
            seq = read(r[2][0])
            parts = seq[1] if seq[0] in ("seq", "tuple") else ()
            return len(parts) == 2 and _pads_to_multiple(parts[0], parts[1], n, read, same, qualify, sub, scope)
        return False
    if r[0] == "binop" and r[1] == "+":
        return _pads_to_multiple(r[2], r[3], n, read, same, qualify, sub, scope)
    return False


def note_sized(scope, target: object, value: object, read: Reader) -> None:
    """An assignment `name = value`: what made the name's value last in this scope, for
    `length_multiple` (another binding form, an in-place change: nothing known, `forget_sized`)."""
    t = read(target)
    if t[0] == "name":
        scope.sized[t[1]] = value


def join_sized(before: dict, arms: list[dict]) -> dict:
    """What made each name last after one of several blocks ran (`branches`), each starting from
    `before`: where every block left the same expression, that one; else nothing known."""
    if not arms:
        return before
    out = {}
    for k, made in arms[0].items():
        if all(a.get(k) is made for a in arms[1:]):
            out[k] = made
        elif all(k in a for a in arms[1:]):
            # (each block made it its own way: known only as one of those, `length_multiple`)
            out[k] = MadeEither(x for a in arms for x in (a[k] if type(a[k]) is MadeEither else (a[k],)))
    return out


class MadeEither(tuple):
    """What made a name last where several blocks each made it another way (`join_sized`): one
    of these expressions."""


def forget_sized(scope, name: str) -> None:
    scope.sized.pop(name, None)


def _sized(name: str, scope) -> object | None:
    while scope is not None:
        if name in scope.env:
            return scope.sized.get(name)
        scope = scope.outer
    return None


def _len_of_name(node: object, read: Reader) -> str | None:
    """`s` for `len(s)` (one positional argument, a name), else None."""
    r = read(node)
    if r[0] != "call" or read(r[1]) != ("name", "len") or len(r[2]) != 1 or len(r[3]) != 1:
        return None
    arg = read(r[2][0])
    return arg[1] if arg[0] == "name" else None


def singleton_test(test: object, read: Reader) -> tuple[str | None, bool]:
    """(`s`, True) for a test true only when the collection `s` has at most one element
    (`len(s) == 1`, `len(s) <= 1`, `len(s) < 2`, either side), (`s`, False) for one false only
    then (`len(s) != 1`, `len(s) > 1`, `len(s) >= 2`), else (None, False)."""
    r = read(test)
    if r[0] != "compare" or r[2] in ("is", "is not"):
        return None, False
    left, right = r[1], r[3]
    return K.singleton_test(r[2], (_len_of_name(left, read), _small_int(left, read)),
                            (_len_of_name(right, read), _small_int(right, read)))


def match_singletons(subject: object, pattern: object, read: Reader, read_pattern: Callable[[object], tuple]) -> tuple[str, ...]:
    """The sets a `case` pins to at most one element: `s` for `match len(s):` with `case 1:` (or
    `case 0 | 1:`), each `len(...)` of a tuple subject whose element of a sequence pattern is
    such a literal (`match (len(a), len(b)): case (1, 0):` pins both `a` and `b`)."""
    r = read(subject)
    if r[0] == "tuple":
        p = read_pattern(pattern)
        pairs = list(zip(r[1], p[1])) if p[0] == "seq" and len(p[1]) == len(r[1]) else []
    else:
        pairs = [(subject, pattern)]
    return tuple(name for sub, pat in pairs
                 if (name := _len_of_name(sub, read)) is not None and _pins_at_most_one(pat, read, read_pattern))


def _pins_at_most_one(pattern: object, read: Reader, read_pattern: Callable[[object], tuple]) -> bool:
    """Whether a `case` pattern matches only lengths of at most one (`1`, `0 | 1`)."""
    p = read_pattern(pattern)
    if p[0] == "value":
        k = _small_int(p[1], read)
        return k is not None and K.singleton_when("==", k) is True
    return p[0] == "or" and bool(p[1]) and all(_pins_at_most_one(x, read, read_pattern) for x in p[1])


_LEAVING_STATEMENTS = frozenset({"return", "raise", "break", "continue"})


def always_leaves(body: object, last_statement: Callable[[object], str | None]) -> bool:
    """Whether a block never falls through to what follows it: its last statement is a `return`,
    `raise`, `break` or `continue` (`last_statement`: the pass's reader of a block)."""
    return last_statement(body) in _LEAVING_STATEMENTS


@dataclass
class Repeated:
    """A loop body run `passes` times in a row: what a value carries from one iteration to the
    next is seen; `narrow`: a name known not to be None at the start of each iteration (`while x
    is not None:`), for a pass that narrows."""

    body: object
    passes: int = 2
    narrow: str | None = None


def loop_arms(body: object, passes: int = 2, narrow: str | None = None) -> list:
    """The blocks of which one runs for a loop: its body, repeated, or nothing (zero iterations);
    None stands for the empty block."""
    return [Repeated(body, passes, narrow), None]


def match_arms(case_bodies: list) -> list:
    """The blocks of which one runs for a `match`: a case's, or none when no case matches (a
    `case _:` need not be there); None stands for the empty block."""
    return [*case_bodies, None]


def enter_singleton(env: dict, name: str | None, narrowed: tuple | None) -> None:
    """In a block where the set `name` holds at most one element (`if len(s) == 1:`), it has no
    order to give: `narrowed` is (its value without the set's order, the value it replaces)."""
    if narrowed is not None:
        env[name] = narrowed[0]


def leave_singleton(env: dict, name: str | None, narrowed: tuple | None) -> None:
    """After such a block: a set the block left alone is again the set it was."""
    if narrowed is not None and env.get(name) is narrowed[0]:
        if narrowed[1] is None:
            del env[name]
        else:
            env[name] = narrowed[1]


class StatementRules:
    """Statement semantics both passes share, as a mixin. A pass supplies `read` (its reader),
    `scope` (with `strings`, see `note_string_binding`), `ev` (an expression's
    value), `bind` (a target takes a value), `is_numeric`, `as_number` (a value marked numeric),
    `is_host`, `as_host` (a value marked host data, `is_host_data`), `is_unordered`, `as_ordered`
    (a set's value, and the same value without its order), `module_scope`, `nothing` (a value
    that carries nothing), `join` (two values' join), `parts` (its reader module:
    `read_try`, `read_with`, `read_while`, `read_for`, `read_match`, `read_pattern`, `read_assert`,
    `read_lambda`,
    `read_comprehension` give a statement's parts),
    `run_block` (a block of statements; None: no statement), what `branches` asks, `data` (what a value carries into an operator's result),
    `tracks_target` (an augmented assignment's target whose current value the pass knows),
    `constant_binding` (the value a name bound to an expression takes: marked constant where the
    pass tracks constants, `is_constant`),
    `assign_targets` (an assignment's target expressions) and `st_other` (a statement it has no
    rule for)."""

    def st_AugAssign(self, node) -> None:
        """`x op= v`: x's value joined with what v carries into the result; a target whose value
        the pass does not track (an attribute, an element under a computed key) takes v's alone.
        `xs += [pad] * (K - len(xs))`, K the greatest length of xs over the processes: xs padded
        to K (`padded_to_greatest`, `padded_list`)."""
        v = self.data(self.ev(node.value))
        cur = self.ev(node.target) if self.tracks_target(node.target) else self.nothing()
        if self.read(node)[2] == "+" and self.tracks_target(node.target) \
                and self.padded_to_greatest(node.target, [node.value]):
            self.bind(node.target, self.padded_list(self.join(self.data(cur), v), node))
        else:
            self.bind(node.target, self.join(cur, v))
        t = self.read(node.target)
        if t[0] == "name":
            self.scope.peeks.pop(t[1], None)  # (`first += x`: no longer what `next(it)` gave)
            _bind_strings(self.scope, t[1], None)  # (nor the string or arithmetic it was bound to)
            forget_sized(self.scope, t[1])  # (nor made as it was: `length_multiple`)

    def ev_NamedExpr(self, node):
        """`(x := v)`: x is bound to v's value, which is also the expression's."""
        v = self.ev(node.value)
        self.bind(node.target, v)
        self.note_peek(node.value, [node.target])
        return v

    def st_Try(self, node) -> None:
        """`try`: the body runs; a handler may start anywhere in it, so in a handler (and after
        the `try`) each name the body bound holds its value there or the one it had before;
        then one of the handlers runs, or the `else` (nothing raised); `finally` after all."""
        body, handlers, orelse, final = self.parts.read_try(node)
        before = self.scope.env
        self.scope.env = inner = before.child()
        self.run_block(body)
        for k in list(inner.written()):
            v, old = inner.get(k), before.get(k)
            if v is not None and old is not None and v is not old:
                inner[k] = self.join(v, old)
        for typ, name, _ in handlers:
            if typ is not None:
                self.ev(typ)
            if name is not None:
                self.scope.env[name] = self.nothing()  # (the exception: the same on every process that raised it)
        # Which of them runs is decided by whether the body raised: where a step of the body that
        # can fail runs on some processes only (`if rank == 0: write(path)`), that is what decides
        # (`raised_where`; nothing where no pass knows).
        self.branches(self.raised_where(body), [*(h for _, _, h in handlers), orelse])
        for k in list(inner.written()):
            before.set_or_delete(k, inner.get(k))
        self.scope.env = before
        self.run_block(final)

    st_TryStar = st_Try

    def st_With(self, node) -> None:
        """`with e as t:`: each context expression is evaluated and its value (what `__enter__`
        gives, taken as the expression's) bound to its target, in order; `entered` is told of each
        (the precise pass: an `__exit__` that does collective work); then the body runs."""
        items, body = self.parts.read_with(node)
        for expr, target in items:
            v = self.ev(expr)
            if target is not None:
                self.bind(target, v)
            self.entered(expr, v)
        self.run_block(body)

    st_AsyncWith = st_With

    def entered(self, expr, value) -> None:
        """A context manager `expr` whose value is `value` was entered (nothing by default)."""

    # ---- a set known to hold at most one element (`len(s) == 1`) has no order to give
    def singleton(self, name: str | None) -> tuple | None:
        """(narrowed value, value it replaces) for the set `name` where it holds at most one
        element: taking its element (`s.pop()`, `next(iter(s))`, a loop) has no order; nor has
        a list in an arbitrary order (a listing's, a set's) of one element (`files[0]`)."""
        if name is None:
            return None
        cur = lookup_local(self.scope, name)
        if cur is None:
            cur = self.module_scope.env.get(name)
        if cur is None:
            return None
        if self.is_unordered(cur):
            return self.as_ordered(cur), self.scope.env.get(name)
        if self.has_order(cur):
            return self.without_order(cur), self.scope.env.get(name)
        return None

    def ev_singleton(self, expr, name: str | None):
        """`expr`'s value where the set `name` holds at most one element (an arm of `a if
        len(s) == 1 else b`)."""
        n = self.singleton(name)
        if n is None:
            return self.ev(expr)
        return with_binding(self.scope.env, name, n[0], n[1], lambda: self.ev(expr))

    def narrow_singleton(self, name: str) -> None:
        """From here on the set `name` holds at most one element (`assert len(s) == 1`, `if
        len(s) != 1: raise`)."""
        n = self.singleton(name)
        if n is not None:
            self.scope.env[name] = n[0]

    def qualify(self, node) -> str | None:
        """The static dotted name of a name or attribute chain, through the module's imports and
        definitions (`np.random.rand` -> "numpy.random.rand"); None for a local name or a
        module-level variable (their values are tracked, not their names) and for anything else.
        A global nothing here names is `global_name`'s (a builtin; the precise pass also looks
        in star imports)."""
        parts = self.name_parts(node)
        if parts is None:
            return None
        value, name = parts
        if value is not None:
            base = self.qualify(value)
            return None if base is None else f"{base}.{name}"
        if lookup_local(self.scope, name) is not None:
            return None
        if name in self.imports:
            return self.imports[name]
        if name in self.module_defs:
            return self.module_defs[name]
        if name in self.module_scope.env:
            return None
        return self.global_name(name)

    # The order an instance was taken in, where its method runs with `self` bound to an element
    # of a per-process order (a pass that tracks it supplies this; None: none).
    instance_order = staticmethod(lambda v: None)

    def self_class(self, node) -> str | None:
        """The class of `self` or `cls` where `node` is that name bound to an instance or class."""
        parts = self.name_parts(node)
        if parts is not None and parts[0] is None and parts[1] in ("self", "cls"):
            return self.class_of(lookup_local(self.scope, parts[1]))
        return None

    def ev_Attribute(self, node):
        """`x.attr`: of `self`/`cls` or of a value of a project class, that class's attribute (a
        method read as a property gives its return value: `member`); of a dotted name, what
        that global is (`global_value`; `jax.distributed`'s process numbers are per process);
        else what the receiver carries, joined with any attribute of that name in the project
        where the receiver's class is not known (`any_member`). A pass supplies those,
        `class_of` (a value's project class), `source` (a per-process value read here),
        `attribute_of` (what else an attribute of that receiver carries), `stored_attribute`
        (what a store earlier in the function, `obj.attr = v`, left there, where it tracks one)
        and `stored_by_call` (what a method called earlier on it, `obj.update(loss)`, stored
        there from its arguments, joined with the rest)."""
        _, value, attr = self.read(node)
        stored = self.stored_attribute(value, attr)
        if stored is not None:
            return stored
        by_call = self.stored_by_call(value, attr)
        if by_call is not None:
            return self.join(self._attribute(node, value, attr), by_call)
        return self._attribute(node, value, attr)

    def _attribute(self, node, value, attr: str):
        cls = self.self_class(value)
        if cls is not None:
            out = self.member(cls, attr, node, True)
            # `self` of a method called on an instance taken in a per-process order
            # (`engines[path].close()` for path in a set): its attributes are that instance's,
            # reached in that order (`instance_order`)
            own = self.instance_order(lookup_local(self.scope, self.name_parts(value)[1]))
            return out if own is None else self.join(out, own)
        q = self.qualify(node)
        if q is not None:
            if q in K.PROCESS_DEPENDENT_CALLS and q.startswith("jax.distributed"):
                return self.source(K.PROCESS_DEPENDENT_CALLS[q], node, kinds.PROCESS_ID)
            return self.global_value(q, node)
        base = self.ev(value)
        out = self.data(base)
        cls = self.class_of(base)
        if cls:
            out = self.join(out, self.member(cls, attr, node, False))
        else:
            anything = self.any_member(attr, base, node)
            if anything is not None:
                out = self.join(out, anything)
        return self.attribute_of(out, base, attr)

    def ev_Subscript(self, node):
        """`x[k]`: `os.environ[k]` is an environment read (`env_read`); else an element of x (a
        tracked constant key's or tuple position's own value where the pass knows it: `picked`),
        joined with what the key carries. With a slice among the keys (`x[a:b]`, `x[i, a:b]`)
        the result is a part of x along that axis: x's own data, its length as x's; a slice whose
        length is written out (`[:n]`, `[a:a + n]`) with n the same everywhere has the same
        length everywhere (other content on each process, assuming len(x) >= n: `same_length`).
        An index into a display of rows of one length (`equal_length_rows`) picks a row of that
        length everywhere, other content per process (`same_length`).
        A pass supplies `varies` (the value itself, not only its content, differs between
        processes), `same_length`, and records through `indexed`, `element_at` and `slice_of`
        (each given the result, returning it or more)."""
        value, keys = self.parts.read_subscript(node)
        if self.qualify(value) == "os.environ":
            return self.env_read(keys[0][1] if len(keys) == 1 and keys[0][0] == "index" else None, node)
        base = self.ev(value)
        if self.agreed(base) and all(k[0] == "index" and self.read(k[1])[0] in ("number", "string") for k in keys):
            return self.sanitized()  # (`process_allgather(x)[0]`: a constant element of an agreed value)
        if len(keys) == 1 and keys[0][0] == "index":
            picked = self.picked(base, keys[0][1])
            if picked is not None:
                return picked
            split = self._split_call(value)
            if split is None and (held := bound_call(value, self.read, self.scope)) is not value:
                split = self._split_call(held)  # (`chunks = np.array_split(x, n)` ... `chunks[i]`)
            if split == "points":
                # `np.array_split(x, [k])[i]`: the split points set each piece's length, which
                # differs from piece to piece unless they are evenly spaced: which rows and how
                # many by i, the count a guess (`split_piece`)
                idx = self.data(self.ev(keys[0][1]))
                self.indexed(node, base, idx, False)
                return self.join(self.data(base), self.split_piece(idx, node))
            if split is not None:
                # `np.array_split(x, n)[i]`: piece i of n whose lengths differ by at most one, and
                # only where len(x) is no multiple of n: which rows by i (content), how many by i
                # only by a guess (`equal_pieces`), as `x[i::n]`; `np.split(x, n)[i]`: pieces of
                # one length (it raises otherwise). What x and n carry flows on as it is.
                idx = self.data(self.ev(keys[0][1]))
                self.indexed(node, base, idx, False)
                piece = self.equal_pieces(idx, node) if split == "array_split" else self.same_length(idx)
                return self.join(self.data(base), piece)
            if self.short_windows(value):
                # `[x[i:i + n] for i in range(0, len(x), n)][k]` (windows `math.ceil(m / p)`
                # long): all n long but the last, short unless n divides len(x) (and past the
                # end, none): which rows by k (content), how many by k only by a guess
                # (`equal_pieces`), as `np.array_split(x, p)[k]`
                idx = self.data(self.ev(keys[0][1]))
                self.indexed(node, base, idx, False)
                return self.join(self.data(base), self.equal_pieces(idx, node))
            if equal_length_rows(value, self.read) or bound_equal_rows(value, self.read, self.scope,
                                                                         self.declared_global):
                # `{0: [12, 8], 1: [44, 9]}[rank]`: whichever row the key picks, it holds as many
                # elements: which ones follow the key (content), how many do not (`same_length`)
                idx = self.data(self.ev(keys[0][1]))
                self.indexed(node, base, idx, False)
                return self.same_length(self.join(self.element(base), idx))
        idx = length = pieces = rest = self.nothing()
        slicing = equal = False
        counted = True  # every key is a slice whose length is written out
        for key in keys:
            if key[0] == "index":
                k = self.data(self.ev(key[1]))
                idx, rest = self.join(idx, k), self.join(rest, k)
                counted = False
                continue
            _, lower, upper, step = key
            slicing = True
            lo, up, st = self.data(self.ev(lower)), self.data(self.ev(upper)), self.data(self.ev(step))
            idx = self.join(self.join(self.join(idx, lo), up), st)
            strided = strided_piece(lower, upper, step, self.read) and not self.varies(st) \
                and not self.varies(up)  # (`x[i:stop:n]` with stop per process: every bound counts)
            n = window_length(lower, upper, self.read, self.parts.same)
            even = self._even_split(lower, upper) if n is None and step is None and not strided else None
            if n is not None and step is None and self.varies(lo) \
                    and ceiling_division(n, self.read, self.qualify, self.scope):
                # `x[rank * n:(rank + 1) * n]`, n = `math.ceil(len(x) / p)`: n long but for the
                # last pieces, short or empty unless p divides len(x): which rows by the start
                # (content), how many only by a guess (`equal_pieces`)
                pieces = self.join(pieces, lo)
                length = self.join(length, self.data(self.ev(n)))
                counted = False
                continue
            if not strided and even is None:
                rest = self.join(self.join(self.join(rest, lo), up), st)
            if even is not None:
                # `x[a * m // n:(a + 1) * m // n]`, m and n the same everywhere: piece a of n whose
                # lengths differ by at most one (`even_split_window`): which elements by a
                # (content), how many by a only by a guess (`equal_pieces`), as `x[a::n]`
                pieces = self.join(self.join(pieces, lo), up)
                rest = self.join(rest, even)
                length = self.join(length, even)
                counted = False
                continue
            if n is not None:
                length = self.join(length, self.data(self.ev(n)))  # `a[start:start + n]`: n long
                counted = counted and step is None
            elif strided and upper is None and self._multiple_of(value, step):
                # `x[i::n]` of a whole made a multiple of n long (`length_multiple`): len(x) // n
                # elements on every process, which ones by i (content)
                rest = self.join(self.join(rest, st), self.piece_content(lo, node))
                length = self.join(length, st)
                counted, equal = False, True
                continue
            elif strided:
                pieces = self.join(pieces, lo)  # (its length a guess: `equal_pieces`)
                rest = self.join(self.join(rest, st), up)
                length = self.join(self.join(length, st), up)
                counted = False
                continue
            else:
                length = self.join(self.join(self.join(length, lo), up), st)
                counted = counted and lower is None and step is None and upper is not None
        self.indexed(node, base, idx, slicing)
        if keys and keys[0][0] == "index" and all(_keeps_axes(k, self.read) for k in keys[1:]) \
                and self.read(value)[0] not in ("tuple", "seq") \
                and (how := boolean_mask(keys[0][1], self.read, self.qualify, self._scalar,
                                         bound=lambda n: bound_expression(n, self.read, self.scope))) is not None:
            # `x[mask]` (`x[mask, None]`, `x[mask, :]`): as many rows as the mask holds True, so a
            # mask whose content differs between processes selects a different number of rows
            # on each (`selected`)
            return self.selected(self.join(self.data(base), idx), idx, node, how == MASK_BY_NAME)
        if not slicing:
            return self.element_at(self.join(self.element(base), idx), base, idx, node)
        if pieces != self.nothing():
            # `x[i::n]`: x's data, which elements by i (content), how many by i only by a guess
            return self.slice_of(self.join(self.join(self.data(base), rest), self.equal_pieces(pieces, node)), length, node)
        if equal:
            # (`x[i::n]` of a whole a multiple of n long: which elements by i, in `rest`)
            return self.slice_of(self.join(self.data(base), rest), length, node)
        out = self.join(self.data(base), idx)
        if counted and not self.varies(length):
            bound = keys[-1][2] if len(keys) == 1 and keys[0][1] is None else None
            out = self.window(out, node, bound, length)
        return self.slice_of(out, length, node)

    def short_windows(self, node) -> bool:
        """Whether `node` (or the comprehension a name assigned once holds) lists the consecutive
        windows of one sequence, whose last ones need not be as long as the others:
        `[x[i:i + n] for i in range(a, len(x), n)]` (the last short unless n divides the rest),
        or windows `ceiling_division` long (`[x[k * n:(k + 1) * n] for k in range(p)]`, n =
        `math.ceil(len(x) / p)`: short or empty at the end unless p divides len(x))."""
        r = self.read(bound_comprehension(node, self.read, self.scope))
        if r[0] != "comp" or len(r[2]) != 1 or r[3]:
            return False
        target, it = r[2][0]
        if self.read(target)[0] != "name" or self.read(r[1])[0] != "subscript":
            return False
        value, keys = self.parts.read_subscript(r[1])
        if len(keys) != 1 or keys[0][0] != "slice" or keys[0][3] is not None:
            return False
        n = window_length(keys[0][1], keys[0][2], self.read, self.parts.same)
        if n is None:
            return False
        if ceiling_division(n, self.read, self.qualify, self.scope):
            return True
        rng = self.read(it)
        return is_range(it, self.read) and len(rng[2]) == 3 == len(rng[3]) and self.parts.same(keys[0][1], target) \
            and self.parts.same(rng[2][2], n) and measures(rng[2][1], value, self.read, self.parts.same, self.qualify)

    def _even_split(self, lower, upper):
        """What m and n carry where the slice `lower:upper` is piece a of n even pieces of m
        elements (`even_split_window`, either bound a name assigned once to its arithmetic:
        `bound_arithmetic`), both plain operands (`plain_operand`) the same on every process;
        None otherwise (every bound then counts as it is)."""
        if lower is None or upper is None:
            return None
        form = even_split_window(bound_arithmetic(lower, self.read, self.scope),
                                 bound_arithmetic(upper, self.read, self.scope), self.read, self.parts.same)
        if form is None or not all(plain_operand(x, self.read, self.qualify) for x in form[1:]):
            return None
        agreed = self.join(self.data(self.ev(form[1])), self.data(self.ev(form[2])))
        return None if self.varies(agreed) else agreed

    def _split_call(self, node) -> str | None:
        """"array_split" for `np.array_split(x, n)` (jax.numpy's too), "split" for `np.split(x,
        n)`, with n a number (`_scalar`) or a name taken for one; "points" for either given split
        points (a list display,
        or a choice with one as an arm: `[k] if ... else n`), which set each piece's length;
        else None."""
        r = self.read(node)
        if r[0] != "call" or len(r[2]) < 2 or len(r[2]) != len(r[3]):
            return None
        q = self.qualify(r[1]) or ""
        root, _, last = q.rpartition(".")
        if root not in ("numpy", "jax.numpy") or last not in ("array_split", "split"):
            return None
        n = self.read(r[2][1])
        if self._scalar(r[2][1]) or n[0] in ("name", "attr"):
            return last  # (a count, or a name taken for one: `np.array_split(x, nproc)`)
        if n[0] in ("seq", "tuple") and _uneven_points(n[1], self.read):
            return None  # (`np.split(x, [3, 5])`: pieces of 3 and 2, known to differ: as any element)
        arms = [n] if n[0] != "ifexp" else [self.read(n[1]), self.read(n[2])]
        return "points" if any(a[0] in ("seq", "tuple") and a[1] for a in arms) else None

    def _scalar(self, node) -> bool:
        """A number, not an array: what a pass takes for a number (`is_numeric`), or a process's
        or device's count or index (`jax.process_index()`)."""
        r = self.read(node)
        if r[0] == "call" and (self.qualify(r[1]) or "").rpartition(".")[2] in _SCALAR_CALLS:
            return True
        return self.is_numeric(node)

    def dunder_len(self, v, node):
        """What `len(v)` adds where v is an instance of a project class defining `__len__`: that
        method's result (a pass resolves the class and records the call); None otherwise."""
        return None

    def declared_global(self, name: str) -> bool:
        """Whether a function of the module declares `name` `global` (and so may bind the
        module's name again when it runs). A pass supplies it; by default, yes."""
        return True

    def selected(self, out, mask, node, by_name: bool):
        """The rows of an array a boolean mask selects (`x[mask]`, `out` its data and the mask's):
        a pass marks their number as process-dependent where the mask's content is; `by_name`: the
        index is a mask by its name only (a guess). By default, `out`."""
        return out

    def islice_window(self, node, args: list, arg0):
        """`itertools.islice(it, n)` is the iterator's window `x[:n]` (its first n elements, fewer
        where it runs out first): with n the same on every process (`carries_nothing`: a constant,
        an agreed value), the same count
        where every process holds n or more, what the iterator yields as content (`window`, as
        for a slice, with a constant n as its bound). None for other forms (a start, a step, a
        bound of None, keywords, `*args`), which carry their arguments as before."""
        r = self.read(node)
        if len(r[2]) != 2 or len(r[3]) != 2 or self.read(r[2][1]) == ("name", "None"):
            return None
        n = next((v for k, v in args if k == 1), None)
        if n is None or not self.carries_nothing(self.data(n)):
            return None  # (a count of this process's own content, `len(local) // b`, counts)
        whole = self.data(self.iterated(arg0, r[2][0]))
        if least_over_processes(r[2][1], self.read, self.qualify, self.scope):
            # (n the least count over the processes: n elements on every process, which ones
            # its own: `bounded_by_least_count`)
            return self.piece_content(whole, node)
        return self.window(self.join(whole, self.data(n)), node, r[2][1], self.data(n))

    def padded_to_greatest(self, xs, added: list) -> bool:
        """Whether `added` (the one value appended to the sequence `xs`: `xs + added`, `xs +=
        added`, `xs.extend(added)`) is a repeated display (`[pad] * (K - len(xs))`) padding xs up
        to the greatest of the processes' gathered lengths of xs (`padded_count`): xs then holds
        K elements on every process (which ones: its content)."""
        if len(added) != 1 or (width := repeated_display_count(added[0], self.read)) is None:
            return False
        padding = padded_count(xs, width, self.read, self.parts.same, self.qualify, self.scope)
        return padding is not None and padding[1]

    def padded_list(self, v, node):
        """(a pass's) A list carrying `v` padded to the same length on every process
        (`padded_to_greatest`)."""
        return v

    def bounded_by_least_count(self, node) -> bool:
        """`zip(range(n), data)` (n agreed: `bounded_by_agreed_range`) with n the least over the
        processes of a count they gathered (`least_over_processes`): no process's count is below
        n, so every process runs n tuples where each counted its own data."""
        _, _, nodes, every = self.read(node)
        if len(nodes) != len(every):
            return False
        for x in nodes:
            r = self.read(x)
            if is_range(x, self.read) and len(r[2]) == 1 == len(r[3]) \
                    and least_over_processes(r[2][0], self.read, self.qualify, self.scope):
                return True
        return False

    def bounded_by_agreed_range(self, node, args: list) -> bool:
        """`zip(..., range(n), ...)` with n the same on every process (`carries_nothing`: its value
        carries nothing that differs, nor anything not yet known): at most n tuples on every process.
        Only a `range`, whose length its arguments say: another argument of no process-dependent
        value may still be endless (`itertools.count()`)."""
        _, _, nodes, every = self.read(node)
        if len(nodes) != len(every) or len(nodes) < 2:
            return False  # (`zip(*rows)`: which argument is which is not known)
        return any(isinstance(k, int) and k < len(nodes) and is_range(nodes[k], self.read)
                   and self.carries_nothing(v)
                   for k, v in args)

    def range_call(self, node, positional: list):
        """`range(...)` given the values of its positional arguments, where its length is known
        apart from what they carry, else None (the arguments' taint, as any builtin): `range(a,
        a + n)` (and `a * n, (a + 1) * n`) is n long, whatever `a` is (`same_length`);
        `range(i, stop, n)` with a process's index `i` below n is a piece of equal ones
        (`piece_of_equal_ones`, `equal_pieces`); what else counts: `range_counts`."""
        _, _, nodes, every = self.read(node)
        if len(nodes) != len(every) or len(nodes) != len(positional) or len(nodes) not in (2, 3):
            return None
        vals = [self.data(v) for v in positional]
        counts = range_counts(node, self.read, self.parts.same)
        if counts is None:
            return None
        if len(nodes) == 2:
            if self.varies(self.data(self.ev(counts[0]))):
                return None
            return self.same_length(self.join(vals[0], vals[1]))
        return self.counting_piece(nodes, vals, node)

    def counting_piece(self, nodes: Sequence, vals: list, node):
        """The value of the i-th of n interleaved pieces of a count, `range(i, stop, n)` or
        `np.arange(i, stop, n)` (`nodes`: start, stop, step as `counting_arguments` finds them;
        `vals`: their data), else None: which numbers by i; how many by stop and n, and by i
        only as `piece_count` says."""
        piece = self.piece_count(*nodes)
        if piece is None or self.varies(vals[1]) or self.varies(vals[2]):
            return None
        if piece == "agreed":
            # `range(i, stop, n)`, stop a multiple of n (`len(x)` of a whole made one): stop // n
            # numbers on every process, which ones by i
            return self.join(self.join(vals[1], vals[2]), self.piece_content(vals[0], node))
        return self.join(self.join(vals[1], vals[2]), self.equal_pieces(vals[0], node))

    def piece_count(self, start, stop, step) -> str | None:
        """How many numbers the i-th of n interleaved pieces of a count gives, `range(i, stop, n)`,
        `np.arange(i, stop, n)` and `jnp.arange(start=i, stop=stop, step=n)` alike
        (`counting_arguments`), where the start is read as an index (`piece_of_equal_ones`):
        "agreed" where `stop` is a multiple of n (`_multiple_stop`: `world * k`, the length of a
        whole made one): stop // n on every process; else "guess": the pieces differ by one
        where stop is no multiple of n, which the program does not show (`equal_pieces`). None
        where it is no such piece (every argument counts)."""
        if start is None or stop is None or not piece_of_equal_ones(start, step, self.read):
            return None
        return "agreed" if self._multiple_stop(stop, step) else "guess"

    def _multiple_of(self, whole, n) -> bool:
        """Whether the sequence `whole` holds a multiple of n elements (`length_multiple`)."""
        return length_multiple(whole, n, self.read, self.parts.same, self.qualify, self.parts.read_subscript,
                               self.scope)

    def _multiple_stop(self, stop, n) -> bool:
        """Whether the number `stop` is a multiple of n: by its arithmetic (`count_multiple`), or
        the length of a sequence made a multiple of n long (`len(x)`, `length_multiple`)."""
        if count_multiple(stop, n, self.read, self.parts.same, self.scope):
            return True
        r = self.read(stop)
        return r[0] == "call" and self.read(r[1]) == ("name", "len") and len(r[2]) == 1 == len(r[3]) \
            and self._multiple_of(r[2][0], n)

    def shard_piece(self, recv, node):
        """`ds.shard(num_shards=n, index=i)` (tf.data, Hugging Face `datasets`; positionally `(n,
        i)`) with a number of shards alike everywhere: piece i of n equal ones, as `x[i::n]` —
        the whole's data, which elements by i (content), how many by i only by a guess
        (`equal_pieces`). None where the call is not of that form."""
        count = self.parts.argument(node, 0, "num_shards")
        index = self.parts.argument(node, 1, "index")
        if count is None or index is None:
            return None
        n = self.data(self.ev(count))
        if self.varies(n):
            return None
        return self.join(self.join(self.data(recv), n), self.equal_pieces(self.data(self.ev(index)), node))

    def picked(self, base, key):
        """The value under a constant key or tuple position of `base`, None where not tracked."""
        return None

    def indexed(self, node, base, idx, slicing: bool) -> None:
        """`base` was indexed (`slicing`: sliced) by keys carrying `idx` at `node` (nothing by
        default)."""

    def element_at(self, out, base, idx, node):
        return out

    def slice_of(self, out, length, node):
        return out

    def ev_IfExp(self, node):
        """`a if test else b`: one of a and b, chosen by the test (`truth`); where both pick the
        same elements (`same_elements`: `x[0] if rank else x[0]`) the test chooses nothing; in
        an arm where a set holds at most one element (`len(s) == 1`) its element has no order.
        A pass supplies `code` (an expression's text) and may record more through `either`
        (given the join of the arms and the test, returning it or more)."""
        c = self.truth(node.test)
        if same_elements(node.body, node.orelse, self.read, self.qualify, self.code):
            return self.join(self.ev(node.body), self.ev(node.orelse))  # (the test picks no other elements)
        self.decides(node, c)
        name, when = singleton_test(node.test, self.read)
        token = self.choice_arms_begin(c)
        try:
            a = self._choice_arm(node, True, name if when else None)
            b = self._choice_arm(node, False, name if not when else None)
        finally:
            self.choice_arms_end(token, node)
        return self.either(self.join(self.join(a, b), c), c, a, b, node)

    def _choice_arm(self, node, taken: bool, name: str | None):
        token = self.choice_arm_begin(node, taken)
        try:
            return self.ev_singleton(node.body if taken else node.orelse, name)
        finally:
            self.choice_arm_end(token)

    def choice_arm_begin(self, node, taken: bool):
        """One arm of `a if test else b` (the body where `taken`) is evaluated next; a token."""
        return None

    def choice_arm_end(self, token) -> None:
        return None

    def either(self, out, cond, a, b, node):
        return out

    def choice_arms_begin(self, cond):
        """The arms of `a if test else b` are evaluated next, each only where the test says (a
        call in one runs on the processes the test picks, as in an `if`'s arm); a token."""
        return None

    def choice_arms_end(self, token, node) -> None:
        return None

    def st_If(self, node) -> None:
        """`if test:` one of the arms runs, chosen by the test (`truth`, `branches`); in an arm
        where a set holds at most one element (`len(s) == 1`) its element has no order, and after
        `if len(s) != 1: raise` s has one element. A pass may run an `if` itself where it knows
        which arm runs (`script_only`: the `__main__` block; `decided`: constant parameters) and
        records around the arms through `arms_of_if` (a token) and `after_if`."""
        if self.script_only(node):
            return
        c = self.truth(node.test)
        if self.decided(node):
            return
        self.decides(node, c)
        name, when = singleton_test(node.test, self.read)
        token = self.arms_of_if(node, c)
        try:
            self.branches(c, [node.body, node.orelse], node, {0 if when else 1: (name,)} if name is not None else None)
        finally:
            self.after_if(node, c, token)
        if name is not None and not when and not node.orelse and always_leaves(node.body, self.parts.last_statement):
            self.narrow_singleton(name)  # `if len(s) != 1: raise ...` — after it, s has one element

    def script_only(self, node) -> bool:
        """Whether the pass ran `node` itself as a block run only when the file is executed as a
        script (`if __name__ == "__main__":`)."""
        return False

    def decided(self, node) -> bool:
        """Whether the pass knows which arm of `node` runs and ran it."""
        return False

    def arms_of_if(self, node, cond):
        return None

    def after_if(self, node, cond, token) -> None:
        """The arms of the `if` `node` have run (nothing by default)."""

    # ---- environment variables
    def env_read(self, key_node, node):
        """An environment variable's value (`os.environ[k]`, `os.environ.get(k)`, `os.getenv(k)`;
        `key_node`: the name's expression, None when not given): per process for a per-process
        name (`RANK`, or a name not known: `K.is_per_process_env_key`), the same everywhere for
        any other; a loop variable over known names (`env_keys`) reads each of them. A computed
        name: per process when computed from a per-process value (each process reads another
        variable, certainly); as the caller decides when computed from the enclosing function's
        parameters only (`env_int("RANK")`: `key_params`, `param_env_read`); else a name not
        known, a guess (from constants only too: which name they make is not evaluated). A pass
        supplies `env_source` (a read of a per-process variable), `key_params` and
        `param_env_read` (a read the call site decides)."""
        if key_node is None:
            return self.env_source(None, False, node)
        keys = env_keys(key_node, self.read, self.scope)
        if keys is not None:
            key = next((k for k in keys if K.is_per_process_env_key(k)), None)
            return self.env_source(key, False, node) if key is not None else self.nothing()
        kv = self.ev(key_node)
        if not self.divergent(kv):
            params = self.key_params(key_node, kv)
            if params:
                return self.param_env_read(params, node)
        return self.env_source(None, self.varies(kv), node)

    # ---- library calls whose result is a source of divergence
    def source_call(self, q: str, node, argu):
        """A call of the library function `q` (`argu`: what its arguments carry) whose result
        differs between processes, else None: a per-process value (`process_dependent_call`: a
        rank, a clock, an unseeded draw; a draw of a given size is other content of one shape,
        unless its module was seeded per process), a directory listing (its order), `hash()` of a
        value hashed with a per-process salt (`hash_salt`), a set (its order by element type:
        `set_order`), an environment variable (`env_read`). A pass supplies `seeded_modules` and `seeded_per_process` (module names),
        `per_process` (a value differs or holds other content), `drawn` (a source of content
        only), `listing` and `string_hash` (sources of order and of a hash) and `new_set` (a set
        of a value's elements, with this order)."""
        _, _, positional, every = self.read(node)
        mod = module_seeded_by(q)
        if mod is not None and self.per_process(argu):
            self.seeded_per_process.add(mod)  # (the module body runs first: later draws follow it)
        desc = process_dependent_call(q, self.seeded_modules, len(every), self.seeded_per_process)
        if desc is not None:
            if q.rsplit(".", 1)[0] not in self.seeded_per_process and draw_of_given_size(
                    q, len(positional), self.parts.keyword_names(node)):
                out = self.drawn(desc, node)
                for size in draw_size_arguments(q, node, positional, self.parts.argument):
                    sv = self.data(self.ev(size))
                    if self.varies(sv):
                        out = self.join(out, sv)  # (a size that differs: a count that differs)
                return out
            return self.source(desc, node, process_dependent_kind(q))
        if q in K.ENV_READ_CALLS:
            return self.env_read(self.parts.argument(node, 0, "key"), node)
        if q in K.FS_LISTING_CALLS:
            # (what it lists is what the directory holds: read from the filesystem, as a file's
            # content is, `listed_content`)
            return self.join(self.listing(q, node), self.listed_content(argu, node, f"`{q.rsplit('.', 1)[-1]}()`"))
        if q == "hash":
            first, starred = self.parts.first_argument(node)
            salt = hash_salt(first if not starred else None, self.read, self._num)
            return self.join(self.string_hash(salt, node), argu) if salt else argu
        if q in K.SET_CONSTRUCTORS:
            first, _ = self.parts.first_argument(node)  # (`set(*xs)`: the starred node, of unknown elements)
            return self.new_set(argu, set_order(first, self.read, self._num))
        return None

    # ---- library calls: which library function or builtin a call is, and what it makes
    def library_call(self, q: str, node, args: list, argu):
        """What a call of the library function or builtin `q` makes, None for a call the index
        resolves (a project function, a library it has no rule for). `args`: the arguments'
        values as (key, value), key a position, a keyword's name, or "*"/"**" (starred); `argu`:
        what they carry together. In this order, each a rule of Python or of JAX:

        - iterating an instance of a project class (`iter(loader)`, `enumerate(loader)`) runs
          its `__iter__` (`iterated`);
        - `jax.distributed.initialize()` makes nothing (`initialized` records where);
        - a replication on this process's devices is the object, here (`on_local_devices`);
        - what a file read at a path holds (or whether it exists) differs where the path does
          only by a guess: the files may hold the same (`file_content`, `FILE_READ_CALLS`);
        - a source (`source_call`); a seeded generator carries its seed (`seed_given`);
        - a type predicate reads its argument's type, not its content (`type_of`);
        - `concurrent.futures.wait`: two sets of futures (`done_sets`);
        - an order-insensitive builtin drops the order (`order_free_call`: a pass adds lengths);
        - `dict.fromkeys(it)` (and `dict` of a set) keeps the keys in the order `it` gives
          them: a set's order, a listing's (`in_set_order`);
        - a concatenation of a part x and a padding of `K - len(x)` rows holds K rows whatever
          x held (`padded_concatenation`, `padded`);
        - `sorted` by a key of few values keeps its input's order (a set's, any per-process
          one) among the elements the key ties (`sort_key_ties`, `tied_order`; `.sort(key=...)`
          too);
        - an order-imposing builtin fixes a set's order where it is called (`set_ordered`,
          `ordered`: a pass adds what it knows of `next`, `iter`, `zip`);
        - a jit wrapper makes a jitted function (`jitted`; run on host data only: nothing
          collective; a `partial(jax.jit, ...)` without a target: a decorator, `jit_factory`); a
          `partial` of a function is that function, local only when what it binds is host data
          (`partial_of`);
        - a sanitizer is collective work whose result agrees (`sanitized`); a collective is
          collective work (`collective_args`, `work`), a global-array constructor makes one;
          `jax.device_put` to a sharding puts host data into a global array (`replicated_input`);
          a sharding, a checkpointer (`sharding_made`, `checkpointer`); a sharding of one device
          (`one_device`, `is_one_device`) is no global sharding: `device_put` there, or a global-
          array constructor given it, makes a single-device array of this process's own
          (`on_one_device`), no cross-process work;
        - a `jax.random` draw from a process-dependent key is other numbers of its shape
          (`drawn_content`), and runs where its key lives;
        - an array op on a global array is collective work and makes one (else `array_op`
          records its operands: read from elsewhere, they may be global arrays);
        - numpy, math and the builtins carry their arguments (`PASSTHROUGH_BUILTINS`).
        A pass also supplies `global_array` (a global array), `is_global`, `is_unordered`,
        `without_order`, `taint`; what it knows more it asks before (`_known_call`)."""
        arg0 = next((v for k, v in args if k == 0), None)
        if q in K.ORDER_IMPOSING and arg0 is not None:
            it = self.iterated(arg0, node)
            if it is not arg0:
                args = [(0, it)] + [kv for kv in args if kv[0] != 0]
                argu = self.join(argu, self.data(it))
                arg0 = it
        if q == K.INITIALIZE:
            return self.initialized(node)
        if q in K.AGREED_CONVERSIONS and arg0 is not None and self.agreed(arg0) \
                and len(self.parts.positional_arguments(node)) == 1:
            return self.sanitized()  # (`int(broadcast_one_to_all(x))`: the same number everywhere)
        if q in K.LOCAL_REPLICATORS:
            return self.on_local_devices(arg0)
        if q in FILE_READ_CALLS and not (q in _OPEN_CALLS and written_path(node, lambda _: q, self.read) is not None):
            # (`open(path, "w")` makes the file: it reads nothing another process wrote)
            return self.file_content(argu, node, f"`{q.rsplit('.', 1)[-1]}()`")
        if q in COPY_WITH_FIELDS_CALLS and arg0 is not None:
            return self.with_fields(arg0, self._keywords_joined(args), node)
        if q == "range":
            made = self.range_call(node, [v for k, v in args if isinstance(k, int)])
            if made is not None:
                return made
        if q == "itertools.islice" and arg0 is not None:
            made = self.islice_window(node, args, arg0)
            if made is not None:
                return made
        endless = endless_call(q, self.read(node)[2], self.read(node)[3])
        if endless == ENDLESS:
            return self.endless(self.data(argu))  # (each process's iteration never ends)
        if endless == UNLESS_EMPTY:
            return self.endless_unless_empty(arg0 if arg0 is not None else argu, node)  # (... but where xs is empty)
        made = self.source_call(q, node, argu)
        if made is not None and q == "time.strftime" and fixed_width_time_format(self.read(node)[3][:1], self.read):
            return self.same_length(made)  # (`time.strftime("%H%M%S")`: other digits, one length)
        if made is not None:
            return self.generator(made) if q in K.RNG_CONSTRUCTORS else made
        if q == "time.strftime" and fixed_width_time_format(self.read(node)[3][:1], self.read):
            return self.same_length(self.data(argu))  # (of a time given: `time.strftime("%y%j", t)`)
        if q in K.UNSEEDED_RNG_CONSTRUCTORS:  # (seeded: its seed may be a sink)
            self.seed_given(q, args, node)
            return self.generator(argu) if q in K.RNG_CONSTRUCTORS else self.data(argu)
        if q in K.RNG_CONSTRUCTORS:
            return self.generator(argu)
        if q in TYPE_PREDICATES:
            return self.type_of(arg0)
        if q in K.IDENTITY_SET_RESULTS:
            return self.done_sets(argu)
        if q in SCALAR_CONVERSIONS and len(args) == 1:
            # `int(a)`, `float(a)`: one number, whatever the argument's shape (which its value may
            # then tell: `scalar_of`; `bool(xs)`, `any(xs)`: `order_free_call`)
            return self.scalar_of(argu)
        if q == "sorted" and arg0 is not None and sort_key_ties(self.parts.keyword_arguments(node), self.read):
            # (a stable sort by a key of few values: each tied group in its input's order)
            return self.join(self.order_free_call(q, node, argu, arg0), self.tied_order(node, arg0))
        if q in K.ORDER_INSENSITIVE and not (q in K.INPUT_ORDER_KEYWORDS and any(
                k in K.INPUT_ORDER_KEYWORDS[q] for k, _ in self.parts.keyword_arguments(node))):
            out = self.order_free_call(q, node, argu, arg0)
            if q == "len" and arg0 is not None and len(args) == 1:
                # `len(loader)` is `type(loader).__len__(loader)`: of an instance of a project
                # class, what that method returns (a count of the share its `__init__` stored)
                by_method = self.dunder_len(arg0, node)
                if by_method is not None:
                    out = self.join(out, by_method)
            return out
        if q == "dict.fromkeys" or q == "dict" and arg0 is not None and self.is_unordered(arg0):
            return self.in_set_order(argu, arg0)
        if q in K.CONCATENATES and (padding := padded_concatenation(
                node, self.read, self.parts.same, self.qualify, self.parts.argument, self.scope)) is not None:
            # `concatenate([x, zeros((K - len(x), d))])`: K rows whatever x held (`padded`)
            out = self.padded(node, padding, args, argu)
            if any(self.is_global(v) for _, v in args):
                self.work(f"`{q.replace('jax.numpy.', 'jnp.')}()` on a global array", node)
                return self.global_array(out)
            return out
        if q in K.ORDER_IMPOSING:
            out = argu
            if arg0 is not None and self.is_unordered(arg0):
                out = self.join(argu, self.set_ordered(node, arg0))
            out = self.ordered(q, node, out, arg0)
            if out is not None and q == "zip":
                # As many tuples as the shortest argument has elements (`zipped`); `zip(range(n),
                # data)`, n alike everywhere: n, unless data runs out first (`bounded`).
                bounded = self.bounded_by_agreed_range(node, args)
                out = self.zipped(out, node, args, "least" if bounded and self.bounded_by_least_count(node) else bounded)
            if out is not None:
                return out
        if q in K.SEED_CALLS:
            self.seed_given(q, args, node)  # (a seed: a string hash there is a sink)
        partial = q in ("functools.partial", "partial")
        positional = self.parts.positional_arguments(node)
        jit = K.JIT_WRAPPERS.get(q) or (K.JIT_WRAPPERS.get(self.qualify(positional[0]) or "")
                                        if partial and positional else None)
        if jit is not None:
            keywords = self.parts.keyword_arguments(node)
            if jit_runs_locally(keywords, self.read, self.qualify):
                return self.nothing()  # (a host-local function: calling it is no collective work)
            kind = jit_kind(jit, [k for k, _ in keywords if k] + ["axis_name"] * (len(positional) > 1 + int(partial)))
            target = positional[0 if not partial else 1] if len(positional) > int(partial) else None
            if target is None and partial:
                return self.jit_factory(kind, node)  # `functools.partial(jax.jit, donate_argnums=0)`
            hostable = not partial and jit_may_run_locally(
                kind, [k or "**" for k, _ in keywords], target, self.read, self.qualify, self._closes_over_host_only)
            chosen = next((v for k, v in args if k == int(partial)), None)
            return self.jitted(kind, target, hostable, chosen, node)
        if partial and args:
            bound = positional[1:] + [v for _, v in self.parts.keyword_arguments(node)]
            return self.partial_of(args[0][1], all(self.is_host(a) for a in bound))
        if q in K.SANITIZERS:
            if q in K.COLLECTIVE_CALLS:
                self.work(K.COLLECTIVE_CALLS[q], node)
            return self.sanitized()
        if q in K.ONE_DEVICE_ARRAY_CONSTRUCTORS and self.is_one_device(
                next((v for k, v in args if k in K.ONE_DEVICE_ARRAY_CONSTRUCTORS[q]), None)):
            # (built on one device: a single-device array, this process's own; no other process
            # takes part, and its data need not agree with theirs)
            return self.on_one_device(argu)
        if q in K.COLLECTIVE_CALLS:
            self.collective_args(q, node, args)
            if q in K.GLOBAL_ARRAY_CONSTRUCTORS:
                # (the leader builds it from its shards, the followers from zeros: interchangeable
                # steps, not communication)
                self.work(K.COLLECTIVE_CALLS[q], node, "construct a global array")
                return self.global_array(self.nothing())
            self.work(K.COLLECTIVE_CALLS[q], node)
            return self.nothing()
        if q == K.DEVICE_PUT:
            target_node = self.parts.argument(node, 1, "device")
            if target_node is None:
                target_node = self.parts.argument(node, 1, "sharding")
            target = next((v for k, v in args if k in (1, "device", "sharding")), None)
            if target is not None and not self.is_one_device(target) and (
                    self.is_sharding(target) or looks_like_sharding(target_node, self.read)):
                # The host value is the whole global array on every process (JAX compares it
                # across processes): it must be the same everywhere.
                what = "`jax.device_put()` to a sharding"
                self.replicated_input(arg0, node, what)
                self.work(what, node)
                return self.global_array(self.nothing())
            return self.device_put_result(argu, arg0)
        if q in K.ONE_DEVICE_SHARDINGS:
            return self.one_device()  # (a sharding of one device: whatever its name says)
        if q in K.SHARDING_CONSTRUCTORS:
            # (its devices: a mesh of the devices a process-dependent value chose, `Mesh(devices_of(
            # my_slice))`, makes a sharding that differs by process, over that group: `group_chosen_by`)
            return self.sharding_made(node, fully_replicated_spec(node, self.read, self.qualify, self.parts.argument),
                                      next((v for k, v in args if k in (0, "mesh", "devices")), None))
        if q.startswith(K.CHECKPOINTER_PREFIXES) and q.rsplit(".", 1)[-1].endswith(K.CHECKPOINTER_CLASS_SUFFIXES):
            return self.checkpointer(argu, synchronous_checkpointer(q, node, self.read, self.qualify, self.parts.argument))
        if q.startswith(K.JAX_RANDOM_PREFIX) and not any(self.is_global(v) for _, v in args):
            out = self.nothing()
            for k, v in args:
                t = self.taint(v)
                out = self.join(out, self.drawn_content(t) if random_content_argument(q, k) else t)
            return out
        if q.startswith(K.ARRAY_OP_PREFIXES):
            if any(self.is_global(v) for _, v in args):
                self.work(f"`{q.replace('jax.numpy.', 'jnp.')}()` on a global array", node)
                return self.global_array(argu)
            self.array_op(q, node, [(k, v) for k, v in args if isinstance(k, int)])  # (operands, not dtypes)
            return argu
        if q.split(".")[0] in ("numpy", "math", "builtins") or q in PASSTHROUGH_BUILTINS:
            return argu
        return None

    def sorted_in_place(self, v, node):
        """A list after `xs.sort(...)` at `node`: its order is gone, as after `sorted(xs)` (a
        pass that resolves calls on the elements later says so for them too)."""
        return self.without_order(v)

    def _keywords_joined(self, args: list):
        """What the keyword arguments (and `**kwargs`) of a call carry together; None if none."""
        out = None
        for k, v in args:
            if isinstance(k, str) and k != "*":
                out = v if out is None else self.join(out, v)
        return out

    def method_call(self, meth: str, recv, node, args: list, argu):
        """What a call of the method `meth` of `recv` (a value not of a known project class's
        own method) makes; None for a call the index resolves (`call_method`). In this order:

        - a jitted function's `.lower()`/`.compile()` stage it; any other method of it makes
          nothing collective here (`callable_method`);
        - a method of an object configured for a subset of processes stays so (`of_subgroup`);
        - a checkpointer's save/restore (or a call given orbax's argument objects) and a barrier
          method are collective work (`work`); a key-value store's blocking get agrees;
        - a listing method lists in filesystem order (`listing_method`); a path's read
          (`Path(p).read_text()`, `fs.open(p)`) is `file_content`, as a library's;
        - a set's methods make sets of its order, `pop` takes an arbitrary element; a dict of a
          set's order keeps it in `keys()`/`values()`/`items()` (`keep_set`, `set_pop`);
        - a mutator puts what it is given into its container (`put_in`; into an element of a
          container: `by_len[n].append(x)`), unless the receiver's project class defines that
          method (`own_method`: `stopper.update(metric)` runs the project's own `update`); a set
          filled after it was built iterates in the order of what was added (`set_order_added`);
          `.sort()` fixes a list's order, as `sorted(...)` does, whatever calls on its elements
          return (`sorted_in_place`);
        - `str.join` of a set takes its order (its elements are strings);
        - `.shard(...)` may partition by process (`sharded` records it), `.shard(num_shards=n,
          index=i)` is a piece of equal ones (`shard_piece`); this process's shards
          of an array are process-local content (`local_shards`);
        - an array method on a global array is collective work and makes one (`as_global`); on
          a value read from elsewhere it may be one (`array_method`); `reshape`/`astype` take
          their shape from their arguments (`reshaped`);
        - `os.environ.get`/`.pop` read the environment (`env_read`); `__next__` of
          process-local data is an element of it;
        - a dict's `keys()`/`values()`/`items()` hold one element per key (`view_of`: a dict of
          known keys or built here has as many elements on every process)."""
        receiver = self.parts.callee_receiver(node)
        if self.is_callable(recv):
            return self.callable_method(meth, recv)
        if meth == "strftime" and fixed_width_time_format(self.read(node)[3], self.read):
            # (`now.strftime("%Y%m%d_%H%M%S")`: other digits on each process, one length)
            return self.same_length(self.data(self.join(recv, argu)))
        if meth in K.ENDLESS_REPEAT_METHODS and endless_repeat(self.read(node)[3], self.read):
            # `ds.repeat()`: a dataset repeated forever, ended at once where it is empty
            return self.endless_unless_empty(recv, node)
        if self.is_subgroup(recv):
            return self.of_subgroup(self.data(self.join(recv, argu)))
        if self.is_checkpointer(recv) and pending_wait_is_local(meth, self.checkpointer_kind(recv)):
            return self.nothing()  # (a synchronous checkpointer has no save pending)
        if meth in K.CHECKPOINTER_COLLECTIVE_METHODS and (self.is_checkpointer(recv) or any(
                self.read(a)[0] == "call" and (self.qualify(self.read(a)[1]) or "").startswith(K.ORBAX_ARGS_PREFIXES)
                for a in self.read(node)[3])):
            self.work(f"checkpointer `.{meth}()`", node, f"checkpointer.{meth}")
            return self.nothing()
        if meth in K.COLLECTIVE_METHOD_NAMES:
            self.work(f"`.{meth}()`", node, meth)
            return self.nothing()
        if meth in K.SANITIZER_METHODS:
            return self.sanitized()
        if meth in K.AGREED_CONVERSION_METHODS and self.agreed(recv):
            return self.sanitized()
        if meth in K.MPI_AGREEING_BUFFER_METHODS and not self.instance_class(recv):
            buffer = agreeing_buffer(node, meth, self.parts, self.read)
            if buffer is not None and self.name_value(self.read(buffer)[1]) is not None:
                self.bind(buffer, self.sanitized())  # (every rank's buffer now holds one value)
            return self.nothing()
        if not self.instance_class(recv) and (desc := thread_state_desc(meth, len(self.read(node)[3]))):
            return self.join(self.data(recv), self.source(desc, node, kinds.SCHEDULING))  # (whether a thread is done)
        if meth in K.FS_LISTING_METHODS:
            return self.join(self.data(recv), self.listing_method(meth, node))
        if meth in FILE_READ_METHODS and not self.instance_class(recv):
            return self.file_content(self.join(self.data(recv), argu), node, f"`.{meth}()`")
        if meth in COPY_WITH_FIELDS_METHODS and not self.instance_class(recv) and args \
                and all(isinstance(k, str) for k, _ in args):
            # (keywords only: `str.replace(old, new)` takes two positional arguments)
            return self.with_fields(recv, self._keywords_joined(args), node)
        if self.is_unordered(recv):
            if meth in K.SET_METHODS:
                return self.keep_set(self.data(self.join(recv, argu)), recv)
            if meth == "pop":
                return self.join(self.data(recv), self.set_pop(node))
            if meth in ("keys", "values", "items"):
                return self.keep_set(self.data(recv), recv)
        if meth in K.RNG_DRAW_METHODS and receiver is not None and self.is_generator(recv):
            amount = self.draw_amount(meth, args, node)
            self.generator_advanced(receiver, recv, amount, node)
            if rng_size_given(meth, len(self.parts.positional_arguments(node)), self.parts.keyword_names(node)):
                # As many numbers as the size says: the generator's seed and the other arguments
                # (bounds, a population) decide which numbers, never how many (`sized_draw`); a
                # size that differs is a count that differs (`amount`).
                return self.sized_draw(self.join(self.data(recv), argu), amount, node)
        if meth == "seek" and args and receiver is not None and self.read(receiver)[0] == "name" \
                and not self.instance_class(recv) and (cur := self.name_value(self.read(receiver)[1])) is not None:
            # (a file's later reads return what lies at the position sought: what decides the
            # position decides what they read, as a file read at a path carrying it)
            self.bind(receiver, self.join(cur, self.file_content(self.data(argu), node, "`.seek()`")))
            return self.nothing()
        if meth == "extend" and receiver is not None and self.read(receiver)[0] == "name" \
                and (cur := self.name_value(self.read(receiver)[1])) is not None \
                and self.padded_to_greatest(receiver, self.parts.positional_arguments(node)):
            # `xs.extend([pad] * (K - len(xs)))`, K the greatest length of xs over the processes
            forget_sized(self.scope, self.read(receiver)[1])
            self.bind(receiver, self.mutated(receiver, self.padded_list(self.data(cur), node)))
            return self.nothing()
        if meth in MUTATORS and args and receiver is not None and not self.own_method(recv, meth):
            root = container_root(receiver, self.read)
            name = self.read(root)[1] if self.read(root)[0] == "name" else None
            if name is not None:
                forget_sized(self.scope, name)  # (grown in place: no longer as long as it was made)
            cur = self.name_value(name) if name is not None else None
            # (a mutation is a write even where it adds nothing the value tracks: under a
            # process-dependent condition or loop the container's length, so its contents, follow
            # that condition, as a name assigned there does: a new object, which `branches` sees
            # as rebound, `mutated`)
            if cur is not None and root is not receiver:
                # (`parts[j].append(i)`: one of its elements grew, not it; a key missing from a
                # container that records its count, a display's or a comprehension's, raises)
                new = self.element_changed(self.join(cur, self.data(self.put_in(argu))), cur)
                self.bind(root, self.mutated(root, new))
                return self.nothing()
            if cur is not None:
                added = self.put_in(argu) if meth in ELEMENT_ADDERS else argu
                if meth in SET_ADDING_METHODS:
                    added = self.join(added, self.data(argu))  # (a set dedupes: which values coincide is its size)
                new = self.join(cur, self.data(added))
                if meth in ELEMENT_ADDERS and meth not in SET_ADDING_METHODS:
                    new = self.one_more_element(new, cur)
                if meth in SET_ADDING_METHODS and (self.is_unordered(cur) or self.is_set(cur)):
                    added_order = set_order_added(meth, self.parts.positional_arguments(node), self.read, self._num)
                    new = self.as_set(new, stronger_order(self.order_of(cur), added_order))
                el = stored_element(meth, args)
                new = self.mutated(receiver, new)
                if el is not None:
                    new = self.holding(new, cur, el)  # (`xs.append(Engine(p))`: what its elements are)
                self.bind(receiver, new)
                return self.element_kept(meth, new)
            if meth in SET_ADDING_METHODS:
                self.attribute_set_filled(meth, recv, receiver, node)
            if cur is None:
                # (`self.xs.append(v)`: the container an attribute holds grew here, by as many
                # elements as this runs times: `attribute_grown`; of what class: `attribute_holds`)
                self.attribute_grown(root)
                if root is receiver and (el := stored_element(meth, args)) is not None:
                    self.attribute_holds(root, el)
        if meth in REMOVERS and receiver is not None and not self.own_method(recv, meth) \
                and not self.instance_class(recv):
            if not any(self.data(v) != self.without_order(self.data(v)) for _, v in args):
                self.removed(receiver)  # (keyed by an arbitrary order's element: see `removed`)
            if meth in ("pop", "popleft", "popitem"):
                # One element of it (chosen by the arguments, or their default): its content, not
                # the container's length
                return self.join(self.element(recv), self.data(argu)) if args else self.element(recv)
        if meth == "sort" and receiver is not None and self.read(receiver)[0] == "name":
            cur = self.name_value(self.read(receiver)[1])
            if cur is not None:
                sorted_v = self.sorted_in_place(cur, node)
                if sort_key_ties(self.parts.keyword_arguments(node), self.read):
                    sorted_v = self.join(sorted_v, self.tied_order(node, cur))  # (as `sorted(xs, key=...)`)
                self.bind(receiver, sorted_v)
            return self.nothing()
        if meth == "join" and args and self.is_unordered(args[0][1]):
            # (`str.join` takes strings only: the set's elements are strings)
            return self.join(argu, self.set_ordered(node, self.unordered_set(args[0][1], SALTED)))
        if meth == "shard":
            self.sharded(recv, argu, node)
            made = self.shard_piece(recv, node)
            if made is not None:
                return made
        if meth in K.LOCAL_SHARD_METHODS and not self.instance_class(recv):
            return self.join(self.data(self.join(recv, argu)), self.local_shards(meth, recv, node))
        if self.is_global(recv) and meth in K.GLOBAL_ARRAY_METHODS:
            self.work(f"`.{meth}()` on a global array", node)
            out = self.as_global(self.data(self.join(recv, argu)))
            return self.reshaped(out, argu, node) if meth in K.SHAPE_METHODS else out
        if meth in K.GLOBAL_ARRAY_METHODS and not self.instance_class(recv):
            self.array_method(meth, recv, node)
        if meth in K.SHAPE_METHODS:
            out = self.reshaped(self.data(self.join(recv, argu)), argu, node)
            if out is not None:
                return out
        if meth in ("get", "pop") and receiver is not None and self.qualify(receiver) == "os.environ":
            return self.env_read(self.parts.argument(node, 0, "key"), node)
        if meth == "__next__" and not self.instance_class(recv) and self.per_process(recv):
            return self.element(recv)
        if meth in DICT_VIEWS and not args and not self.instance_class(recv):
            return self.view_of(recv)  # (None where the pass knows no more than the whole)
        return None

    @staticmethod
    def element_changed(new, cur):
        """The container `cur` after a method changed one of its elements in place (`parts[j].append(i)`),
        `new` its joined data: as many elements as it had, whatever they now hold (a pass that
        records what decides a container's count keeps `cur`'s)."""
        return new

    @staticmethod
    def one_more_element(new, cur):
        """The list `cur` after a method put one element in it (`xs.append(v)`, `insert`), `new`
        its joined data: still the list it was, one element longer, whatever the element holds (a
        pass that tracks a container's structure keeps `cur`'s; a list stays a list)."""
        return new

    def removed(self, target) -> None:
        """`xs.pop()`, `d.pop(k)`, `s.discard(x)`, `del d[k]`: the container named by `target` (or
        holding `target`'s element) lost elements in place. Under a process-dependent condition
        or loop, which keys (how many elements) it holds then follows it, as after a mutator
        that adds: it is rebound to itself, changed (`mutated`). (A caller skips a removal keyed
        by an element of an arbitrarily ordered iteration, `for k in names: d.pop(k)`: whatever
        the order, the same keys go; the condition on that element says nothing more.)"""
        root = container_root(target, self.read)
        r = self.read(root)
        if r[0] != "name":
            return
        cur = self.name_value(r[1])
        if cur is not None:
            self.bind(root, self.mutated(root, cur))

    def mutated(self, name, v):
        """What the container named `name` holds after a method changed it in place (`xs.append(v)`):
        `v`, as a new object, so that a block that mutated it counts as having rebound it
        (`branches` joins what each block rebound, by identity), however little the value records
        of the change. A pass drops what the change makes unknown (the precise pass: a display's
        element count) and may note that the block grew it."""
        return copy.copy(v)

    @staticmethod
    def scalar_of(v):
        """What one number made of `v` (`bool(v)`, `int(v)`) carries: `v`'s data; a pass that
        tracks shapes takes `v`'s length or shape as part of the number's value, not of its shape."""
        return v

    def draw_amount(self, meth: str, args: list, node):
        """What decides how much a draw `gen.meth(...)` takes from its generator
        (`K.RNG_DRAW_METHODS`; `args`: the arguments' values as (position or keyword, value)):
        its size arguments' values; nothing for a draw of one number. A size read off arrays
        (`size=x.shape`, `len(x)`, `(x.shape[0], 1)`: `extent_parts`) is their extent alone
        (`extent_of`): an array of
        other content but one shape everywhere draws as much everywhere."""
        at, kw = K.RNG_DRAW_METHODS[meth]
        out = self.nothing()
        if at is None:
            return out
        sized = self.read(node)[2] if at == -1 else [self.parts.argument(node, at, kw)]
        for k, v in args:
            if k == kw or k == at or at == -1 and isinstance(k, int):
                expr = sized[k] if at == -1 and isinstance(k, int) and k < len(sized) else (sized[0] if at != -1 else None)
                arrays = extent_parts(expr, self.read, self.qualify) if expr is not None else None
                if arrays is None:
                    out = self.join(out, self.data(v))
                for array in arrays or ():
                    out = self.join(out, self.extent_of(self.ev(array)))
        return out

    # ---- one of several blocks runs: `if`, loops (`loop_arms`), `match`, `try` handlers
    def branches(self, cond, blocks: list, node=None, singleton: dict[int, tuple[str, ...]] | None = None) -> None:
        """One of `blocks` runs (None: an empty block), chosen by the value `cond` (`nothing()`
        where no value chooses: a `try`'s handlers). Each block runs in its own layer over the
        scope (analysis/env.py), so the cost is what the blocks bind; then each name a block
        rebound holds the join of what the blocks left. Where the choice is the same on every
        process, a value made to agree on one side counts as agreed (`if multi_process: x =
        broadcast(x)`, else the single-process path); what the choice itself carries into what
        the blocks bound is the pass's (`bound_under`). `singleton`: block index -> names of the
        sets known to hold at most one element in that block. A pass supplies `arms_begin(cond)` (a
        token), `run_arm(block, token)`, `arms_end(token)` (a context for `bound_under`),
        `divergent(cond)`, `agreed(value)` and `bound_under(value, name, vals, context)`."""
        before = self.scope.env
        results = []
        sized_before, sized_after = self.scope.sized, []
        token = self.arms_begin(cond)
        for i, b in enumerate(blocks):
            self.scope.env = before.child()
            self.scope.sized = dict(sized_before)
            snames = singleton.get(i, ()) if singleton is not None and b is not None else ()
            narrowed = [(sname, self.singleton(sname)) for sname in snames]
            for sname, n in narrowed:
                enter_singleton(self.scope.env, sname, n)
            self.run_arm(b, token)
            for sname, n in reversed(narrowed):
                leave_singleton(self.scope.env, sname, n)
            results.append(self.scope.env)
            sized_after.append(self.scope.sized)
        self.scope.env = before
        # (what made a name last: known after the blocks only where every block leaves the same)
        self.scope.sized = join_sized(sized_before, sized_after)
        context = self.arms_end(cond, node, token)
        uniform = not self.divergent(cond)
        for k, vals in branch_changes(before, results).items():
            present = [v for v in vals if v is not None]
            if not present:
                before.set_or_delete(k, None)
                continue
            if len(present) < len(vals) and is_stored_attribute_key(k) \
                    and not (uniform and any(self.agreed(v) for v in present)):
                # (a block that stored no such attribute leaves it as the object holds it)
                before.set_or_delete(k, None)
                continue
            m = present[0]
            for v in present[1:]:
                m = self.join(m, v)
            if uniform:
                agreed = [v for v in present if self.agreed(v)]
                if agreed:
                    m = agreed[0]
            before[k] = self.bound_under(m, k, vals, context)

    # ---- loops: the body zero times or repeated (`loop_arms`)
    MAX_LOOP_DEPTH_TWICE: int | None = None  # loops nested deeper run their body once (a pass's cost bound)
    loop_depth = 0

    def loop(self, cond, body, node=None, narrow: str | None = None) -> None:
        """A loop whose iterations `cond` decides: its body zero times or twice in a row (what a
        value carries from one iteration to the next is seen), once beyond
        `MAX_LOOP_DEPTH_TWICE` nested loops; `narrow`: a name not None at each iteration's start."""
        self.loop_depth += 1
        try:
            deep = self.MAX_LOOP_DEPTH_TWICE is not None and self.loop_depth > self.MAX_LOOP_DEPTH_TWICE
            self.branches(cond, loop_arms(body, 1 if deep else 2, narrow), node)
        finally:
            self.loop_depth -= 1

    def truth(self, test):
        """What the outcome of the test of an `if`/`while`/conditional expression carries: the
        test's data, without order where it takes the truth of a whole value (`if files:`,
        `truth_of_whole`: whether a listing is empty does not depend on its order, and a piece's
        emptiness is its length's, a guess: `length_only`). A pass supplies `without_order` and
        `length_only`). `a and b`, `a or b`, `not (a and b)`: the outcome is decided by each
        operand's truth, so each operand is taken as a test of its own (`if shard and step > 0:`
        tests the shard's emptiness, not its content)."""
        r = self.read(test)
        if r[0] == "unary" and r[1] == "not" and self.read(r[2])[0] == "boolop":
            r = self.read(r[2])
        if r[0] == "boolop":
            self.ev(test)  # (what evaluating it does: calls, sinks)
            out = self.nothing()
            for operand in r[2]:
                out = self.join(out, self.truth(operand))
            return out
        if truth_of_whole(test, self.read):
            return self.emptiness(self.ev(r[2] if r[0] == "unary" else test), test)
        return self.data(self.ev(test))

    def emptiness(self, whole, node=None):
        """What whether `whole` is empty carries (`if files:`, `not files`, tested at `node`):
        its data without order, a piece's length a guess (`length_only`). A pass may know more of
        a container's length (`FileAnalysis.emptiness`) or of what its order comes from
        (`SummaryBuilder.emptiness`)."""
        return self.length_only(self.without_order(self.data(whole)))

    def st_While(self, node) -> None:
        """`while test:` the test decides each iteration, evaluated again after the body with what
        the body carries into it; `while x is not None:` x is not None in the body; the `else`
        runs after (a `break` skipping it is not told apart)."""
        test, body, orelse = self.parts.read_while(node)
        c = self.truth(test)
        self.decides(node, c)
        name, is_none = none_test(test, self.read)
        self.enter_iteration(c)
        try:
            self.loop(c, body, node, narrow=name if name is not None and not is_none else None)
        finally:
            self.leave_iteration()
        self.decides(node, self.truth(test))
        self.run_block(orelse)

    def st_For(self, node) -> None:
        """`for t in it:` t takes an element of `it` (of a project class: what its `__iter__`
        gives, `iterated`), with the order of a set's iteration (`iteration`); an element of host
        data is host data, of a `range` a number. The iterable's length decides how often the
        body runs (`iteration_count`). A name that only accumulates over the elements (a sum, a
        maximum, a flag: `order_free_accumulators`) keeps no order from the iteration
        (`order_free`). A pass supplies those, `bind_iteration` (the target takes the element),
        `statement_reader` (a `Statements`) and `enter_iteration`/`leave_iteration` (around the
        body)."""
        target, iterable, body, orelse = self.parts.read_for(node)
        it = self.iterated(self.ev(iterable), iterable)
        it, elem, order = self.iteration(it, iterable)
        if self.read(target)[0] == "name" and self.is_host(iterable):
            elem = self.as_host(elem)  # an element of host data
        if is_range(iterable, self.read):
            elem = self.as_number(elem)
        self.bind_iteration(target, iterable, elem)
        note_loop_strings(self.scope, target, iterable, self.read)
        accs = order_free_accumulators(target, body, self.statement_reader, self._num) if order else ()
        self.enter_iteration(it)
        try:
            self.loop(self.iteration_count(it, iterable, node), body, node)
        finally:
            self.leave_iteration()
        for n in accs:
            self.order_free(n, order, node)
        self.run_block(orelse)

    st_AsyncFor = st_For

    # ---- comprehensions and generators
    def comprehension(self, node, kind: str):
        """`[e for t in it if c]` (`kind`: "list", "set", "dict", "gen"): in a scope of its own
        (`enter_comp_scope`), each `for`'s target takes an element of its iterable as in
        `st_For` (with a set's iteration order; a range's element is a number), each filter
        chooses which elements are kept, and the result holds what the element expressions give.
        A set built this way takes no order from the iteration: it has its own (`ev_SetComp`).
        A pass supplies its value protocol: `comp_start` (an accumulator), `comp_iteration`,
        `comp_filter`, `comp_element` and `comp_result`."""
        generators, elts = self.parts.read_comprehension(node)
        saved = self.enter_comp_scope()
        acc = self.comp_start(kind)
        entered = 0
        try:
            for target, iterable, filters, at in generators:
                it = self.iterated(self.ev(iterable), iterable)
                ordered, elem, order = self.iteration(it, iterable) if kind != "set" else (it, self.element(it), None)
                if is_range(iterable, self.read):
                    elem = self.as_number(elem)
                self.comp_iteration(acc, it, order, iterable, at)
                self.bind_iteration(target, iterable, elem)
                note_loop_strings(self.scope, target, iterable, self.read)
                # (the filters and element expressions run once per element, in the iterable's
                # order, as a `for` body does: `st_For`'s `enter_iteration`)
                self.enter_iteration(ordered)
                entered += 1
                for test, test_at in filters:
                    self.comp_filter(acc, self.data(self.ev(test)), test_at, node)
            for e in elts:
                self.comp_element(acc, self.ev(e), e, elts)
        finally:
            for _ in range(entered):
                self.leave_iteration()
            self.leave_comp_scope(saved)
        return self.comp_result(acc, node)

    def leaf_map(self, q: str, node, args: list) -> None:
        """`jax.tree.map(lambda x, y: ..., xs, ys)`, `map(lambda x: ..., xs)` (`K.LEAF_MAPS`): the
        call runs the lambda here, on each leaf of the first tree with the matching leaves of the
        others, so its parameters hold those leaves (`element` of each tree given after it); the
        rest of them (defaults, `*args`) nothing. Its body is evaluated in a scope of its own
        (`enter_lambda_scope`): what it passes on (a leaf put on a replicated sharding, gathered)
        and the work it does are this call's. `args`: the call's (key, value) pairs, as
        `library_call` takes them."""
        if q not in K.LEAF_MAPS:
            return
        call = self.read(node)
        fn = self.parts.read_lambda(call[2][0]) if call[0] == "call" and call[2] else None
        if fn is None:
            return
        positional, names, body = fn
        trees = [v for k, v in args[1:] if isinstance(k, int)]
        saved = self.enter_lambda_scope()
        try:
            for name in names:
                self.scope.env[name] = self.nothing()
            for name, tree in zip(positional, trees):
                self.scope.env[name] = self.tree_leaf(tree)
            self.ev(body)
        finally:
            self.leave_comp_scope(saved)

    def tree_leaf(self, tree):
        """A leaf of the pytree `tree`, as a leaf map's lambda parameter holds it: an element of it
        (`element`), unless the pass knows its parts."""
        return self.element(tree)

    def enter_lambda_scope(self):
        """A lambda's own scope, left with `leave_comp_scope` (by default a comprehension's)."""
        return self.enter_comp_scope()

    def ev_ListComp(self, node):
        return self.comprehension(node, "list")

    def ev_GeneratorExp(self, node):
        return self.comprehension(node, "gen")

    def ev_DictComp(self, node):
        return self.comprehension(node, "dict")

    def ev_SetComp(self, node):
        return self.unordered_set(self.comprehension(node, "set"), set_order(node, self.read, self._num))

    def enter_iteration(self, it) -> None:
        """The body of a loop over `it` (of a `while`: its test's value) starts (nothing by
        default)."""

    def leave_iteration(self) -> None:
        """The body of that loop is done."""

    def st_Match(self, node) -> None:
        """`match subject:` the subject's value and the cases' guards (each evaluated when its
        pattern matches) decide which case runs, or none (`match_arms`)."""
        subject, cases = self.parts.read_match(node)
        c = self.data(self.ev(subject))
        for guard, _, _ in cases:
            if guard is not None:
                c = self.join(c, self.data(self.ev(guard)))
        self.decides(node, c)
        pinned = {i: names for i, (_, _, pattern) in enumerate(cases)
                  if (names := match_singletons(subject, pattern, self.read, self.parts.read_pattern))}
        self.branches(c, match_arms([body for _, body, _ in cases]), node, pinned or None)

    def st_Assert(self, node) -> None:
        """`assert test, msg`: a failing test leaves (the message is evaluated then); after
        `assert len(s) == 1` the set s has one element."""
        test, msg = self.parts.read_assert(node)
        self.decides(node, self.data(self.ev(test)))
        if msg is not None:
            self.ev(msg)
        name, when = singleton_test(test, self.read)
        if name is not None and when:
            self.narrow_singleton(name)

    def decides(self, node, cond) -> None:
        """The statement `node` chooses what runs by the value `cond` (nothing by default)."""

    def raised_where(self, body):
        """What decides whether the `try` body `body` raises, where it can raise on some processes
        only (a pass that knows; else nothing)."""
        return self.nothing()

    def stmt(self, node) -> None:
        m = getattr(self, "st_" + type(node).__name__, None)
        if m is not None:
            m(node)
        else:
            self.st_other(node)

    def st_Expr(self, node) -> None:
        self.ev(node.value)

    def st_Assign(self, node) -> None:
        # `x = y = v`: every target takes v's value. A numeric expression makes a number (a set of
        # numbers has one order everywhere, `hash(n)` is n).
        v = self.ev(node.value)
        if self.is_numeric(node.value):
            v = self.as_number(v)
        if self.is_host(node.value):
            v = self.as_host(v)
        v = self.constant_binding(node.value, v)
        targets = self.assign_targets(node)
        same = self.pushed_back(node.value) or self.rewrapped(node.value)
        for t in targets:
            if same is not None and self.read(t) == ("name", same):
                # (`it = chain([first], it)` after `first = next(it)`; `steps = tqdm(steps)`: the
                # same elements)
                continue
            self.bind(t, v)
            note_string_binding(self.scope, t, node.value, self.read)
            if self.read(t)[0] == "attr":
                self.stored_attribute_from(t, node.value, v)
            elif self.read(t)[0] == "name":
                self.bound_instance(t, node.value)
        self.note_peek(node.value, targets)

    def stored_attribute_from(self, target, value, v) -> None:
        """Hook: `x.attr = value` (v: its value). The summary records a store computed from the
        attribute's own value by a call (`ModuleSummary.restores`); the precise pass asks the
        index."""

    def bound_instance(self, target, value) -> None:
        """Hook: `name = value` just bound. An instance a construction made (`p = Plain(rank,
        10)`, `args = parse_args(rank)` returning one) holds in its attributes what that
        construction passed, whatever other constructions pass (`ProjectIndex.instance_attrs`):
        the precise pass keeps that beside the name."""

    # ---- peeking at an iterator and putting the element back (`first = next(it)`, then
    # `it = itertools.chain([first], it)`) leaves it yielding the elements it yielded before
    def note_peek(self, value, targets: list) -> None:
        """After `name = value`: where value is `next(it)` (no default) of a name, remember it
        with the object `it` is bound to now; any other value assigned to `name` forgets it.
        (A store into the element, `first["k"] = v`, changes what the element holds, not
        which element it is.)"""
        peeks = self.scope.peeks
        r = self.read(value)
        it = None
        if r[0] == "call" and self.qualify(r[1]) == "next" and len(r[2]) == 1 and len(r[3]) == 1:
            a = self.read(r[2][0])
            it = a[1] if a[0] == "name" else None
        for t in targets:
            n = self.read(t)
            if n[0] != "name":
                continue
            if it is not None and n[1] != it:
                peeks[n[1]] = (it, self.name_value(it))
            else:
                peeks.pop(n[1], None)

    def pushed_back(self, value) -> str | None:
        """`it` for `itertools.chain([first], it)` (or `(first,)`) where `first` was last assigned
        `next(it)` and `it` is still the iterator it was taken from: the chain
        yields exactly the elements `it` would have yielded had nothing been taken (a rule of
        Python), so rebinding `it` to it changes nothing. None otherwise."""
        r = self.read(value)
        if r[0] != "call" or len(r[2]) != 2 or len(r[3]) != 2 or self.qualify(r[1]) != "itertools.chain":
            return None
        head, rest = self.read(r[2][0]), self.read(r[2][1])
        if head[0] not in ("seq", "tuple") or len(head[1]) != 1 or rest[0] != "name":
            return None
        first = self.read(head[1][0])
        seen = self.scope.peeks.get(first[1]) if first[0] == "name" else None
        if seen is None or seen[0] != rest[1] or seen[1] is None:
            return None
        return rest[1] if self.name_value(rest[1]) is seen[1] else None

    def rewrapped(self, value) -> str | None:
        """`steps` for `tqdm(steps, ...)` (`K.SAME_ELEMENTS_WRAPPERS`, nested too): the wrapper
        yields the elements of the name it wraps, in its order (a rule of those callables), so
        rebinding the name to it leaves what a loop over it runs the same. `if jax.process_index()
        == 0: steps = tqdm(steps)` then gives every process the same steps: only the progress bar
        differs. None otherwise."""
        n = unwrapped_elements(value, self.read, self.qualify)
        if n is value:
            return None
        r = self.read(n)
        return r[1] if r[0] == "name" else None

    def st_AnnAssign(self, node) -> None:
        if node.value is not None:  # (a bare annotation binds nothing)
            v = self.ev(node.value)
            v = self.constant_binding(node.value, self.as_host(v) if self.is_host(node.value) else v)
            self.bind(node.target, v)
            note_string_binding(self.scope, node.target, node.value, self.read)
            if self.read(node.target)[0] == "name":
                self.bound_instance(node.target, node.value)


# ---- boolean masks: `x[mask]` holds as many rows as the mask holds True ---------------------------
MASK_BY_NAME = "name"
_MASK_PREDICATES = frozenset({"isfinite", "isnan", "isinf", "isin", "isclose", "logical_and", "logical_or",
                              "logical_not", "logical_xor", "greater", "less", "equal", "not_equal", "greater_equal",
                              "less_equal", "nonzero_mask"})
_MASK_PASSTHROUGH = frozenset({"asarray", "array", "ravel", "flatten", "reshape", "squeeze", "copy"})


_SCALAR_CALLS = frozenset({"process_index", "process_count", "device_count", "local_device_count"})


def _keeps_axes(key: tuple, read: Reader) -> bool:
    """Whether a subscript key after the first keeps the rows the first selects: a whole axis
    (`:`) or a new one (`None`)."""
    if key[0] == "index":
        return read(key[1]) == ("name", "None")
    return key[1:] == (None, None, None)


def _mask_name(name: str) -> bool:
    """A name that says it is a mask (`mask`, `valid_mask`, `attention_masks`), not one of a
    mask's positions or ids (`mask_positions`, `masked_lm_ids`, `mask_idx`)."""
    return name.lower().rsplit("_", 1)[-1] in ("mask", "masks")


def boolean_mask(node: object, read: Reader, qualify: Qualify, scalar: Callable[[object], bool] = lambda n: False,
                 depth: int = 4, bound: Callable[[object], object] | None = None) -> str | None:
    """Whether an index is a boolean mask: "certain" for a comparison (not of two numbers, `rank ==
    0`, which is one bool), `&`/`|`/`^`/`~` of one, a numpy/jax.numpy predicate (`np.isfinite(x)`,
    `jnp.logical_and`), `.astype(bool)`, and `np.asarray`/`.reshape` of a mask; `MASK_BY_NAME` for a
    name or attribute named as a mask (`mask`, `self.valid_mask`: `_mask_name`), what it holds not
    followed; else None. `scalar`: whether an operand is a number. `bound`: the expression a name
    assigned once holds (`bound_expression`): a name that holds a mask is one (`keep = scores >
    t; boxes[keep]`), as it is written there."""
    if depth <= 0:
        return None
    r = read(node)
    tag = r[0]
    if tag == "compare":
        return None if scalar(r[1]) and scalar(r[3]) else "certain"
    if r == ("other", "compare"):
        return "certain"
    if tag == "binop" and r[1] in ("&", "|", "^"):
        a = boolean_mask(r[2], read, qualify, scalar, depth - 1, bound)
        b = boolean_mask(r[3], read, qualify, scalar, depth - 1, bound)
        return "certain" if "certain" in (a, b) else (a or b)
    if tag == "unary" and r[1] == "~":
        return boolean_mask(r[2], read, qualify, scalar, depth - 1, bound)
    if tag == "name":
        if _mask_name(r[1]):
            return MASK_BY_NAME
        held = bound(node) if bound is not None else node
        return None if held is node else boolean_mask(held, read, qualify, scalar, depth - 1, bound)
    if tag == "attr":
        return MASK_BY_NAME if _mask_name(r[2]) else None
    if tag == "call":
        func, args = r[1], r[2]
        q = qualify(func) or ""
        root, _, last = q.rpartition(".")
        if root in ("numpy", "jax.numpy") and last in _MASK_PREDICATES:
            return "certain"
        fr = read(func)
        if fr[0] == "attr" and fr[2] == "astype" and args and read(args[0]) in (("name", "bool"),) \
                or fr[0] == "attr" and fr[2] == "astype" and args and qualify(args[0]) in ("numpy.bool_", "jax.numpy.bool_"):
            return "certain"
        if root in ("numpy", "jax.numpy") and last in _MASK_PASSTHROUGH and args:
            return boolean_mask(args[0], read, qualify, scalar, depth - 1, bound)
        if fr[0] == "attr" and fr[2] in _MASK_PASSTHROUGH:
            return boolean_mask(fr[1], read, qualify, scalar, depth - 1, bound)
    return None


# ---- host data: what a jitted computation given only these inputs runs on ------------------------
# A jitted computation whose inputs are all host data (numpy arrays, Python scalars and lists, or
# arrays it produced itself from such inputs) runs on this process's default device only: it is
# process-local work, not cross-process work, whatever branch or loop it runs in.

# Calls whose result is host data whatever their arguments: numpy copies (or refuses) what it is
# given, `jax.device_get` fetches this process's shards.
_HOST_CALL_PREFIXES = ("numpy.",)
_HOST_CALLS = frozenset({"jax.device_get", "tensorflow_datasets.as_numpy", "int", "float", "bool", "str", "len",
                         "round", "abs", "repr", "format", "range", "hash", "id"})
# Builtins whose result is host data when their arguments are.
_HOST_IF_ARGS_CALLS = frozenset({"list", "tuple", "dict", "sorted", "reversed", "enumerate", "zip", "next", "iter",
                                 "min", "max", "sum", "jax.device_put"})
# Methods whose result is host data whatever their receiver (a tf tensor's or a jax array's copy
# on the host; a tf dataset's numpy iterator).
_HOST_METHODS = frozenset({"numpy", "item", "tolist", "copy_to_host", "as_numpy_iterator", "__array__"})
# Jit wrappers whose computation runs where its inputs live (pmap and shard_map span every
# process's devices whatever their inputs).
LOCAL_JIT_KINDS = frozenset({"jit", "pjit", "nnx.jit", "filter_jit"})
# Wrappers whose result lives on this process's own devices (pmap: one shard per local device,
# fully addressable): what is computed from it, jitted or not, is this process's work.
PMAP_KINDS = frozenset({"pmap", "nnx.pmap", "filter_pmap"})
# Appended to a pmap's kind given no axis name (`jax.pmap(vae.decode)`): its body names no axis to
# reduce over, so its devices exchange nothing (`jit_kind`).
NO_AXIS = ", no axis name"
# Appended where a pmap-decorated project function is applied whose body, as the index follows
# it (its calls, the project's helpers), does no collective work (`ProjectIndex.call_name`):
# library code it calls (a flax module's `apply`) may still reduce over the axis.
NO_REDUCTION = ", no collective in its body"
LOCAL_RESULT_KINDS = PMAP_KINDS | {k + NO_AXIS for k in PMAP_KINDS} | {k + NO_REDUCTION for k in PMAP_KINDS}
# Keywords of a jit wrapper that say nothing about where it runs (any other one, e.g.
# `in_shardings`, `out_shardings`, `device`, `backend`, may name a global sharding).
_PLACEMENT_FREE_JIT_KEYWORDS = frozenset({"static_argnums", "static_argnames", "donate_argnums", "donate_argnames",
                                          "inline", "keep_unused", "abstracted_axes", "compiler_options"})
# Roots of the libraries a jitted function may name without closing over the project's arrays.
LIBRARY_ROOTS = ("jax", "numpy", "math", "functools", "operator", "flax", "optax", "einops", "typing", "chex")
# (`jax.random` draws run where their key lives: on host data, this process's default device.)
_ARRAY_OP_PREFIXES = K.ARRAY_OP_PREFIXES + (K.JAX_RANDOM_PREFIX,)
_MESH_CONTEXT = re.compile(r"\b(?:set_mesh|use_mesh)\b|^[ \t]*(?:async[ \t]+)?with\b[^\n]*mesh", re.MULTILINE | re.IGNORECASE)

HostName = Callable[[str], bool]
Qualify = Callable[[object], "str | None"]
LocalCall = Callable[[object], bool]


def is_host_data(node: object, read: Reader, host_name: HostName, qualify: Qualify,
                 local_call: LocalCall = lambda n: False, bound: Collection[str] = frozenset()) -> bool:
    """Whether `node` is provably host data: a literal, a numpy value, a Python container of host
    data, `jax.device_get(...)`, `.numpy()`/`.item()`, a jax.numpy op on host data (it runs on this
    process's default device), names the pass has seen bound to host data (`host_name`, `bound`),
    and calls the pass knows run a jitted function locally on host data (`local_call`). Anything
    else (a parameter, an attribute of an object, a project helper's result) is not."""
    def host(n: object) -> bool:
        return is_host_data(n, read, host_name, qualify, local_call, bound)

    r = read(node)
    tag = r[0]
    if tag in ("number", "string", "text"):
        return True
    if tag == "other":
        return r[1] in ("constant", "joinedstr", "formattedstring", "concatenatedstring", "bytes", "simplestring")
    if tag == "name":
        return r[1] in ("True", "False", "None") or r[1] in bound or host_name(r[1])
    if tag == "attr":
        q = qualify(node)
        if q is not None:
            return q.startswith(_HOST_CALL_PREFIXES)  # `np.pi`, `np.float32`
        return host(r[1])  # `x.T`, `x.shape` of host data
    if tag == "subscript":
        return host(r[1])
    if tag in ("tuple", "seq", "dict"):
        return all(host(e) for e in r[1])
    if tag == "binop":
        return host(r[2]) and host(r[3])
    if tag == "unary":
        return len(r) > 2 and host(r[2])
    if tag == "ifexp":
        return host(r[1]) and host(r[2])
    if tag == "comp":
        inner = set(bound)
        for target, it in r[2]:
            t = read(target)
            if t[0] != "name" or not is_host_data(it, read, host_name, qualify, local_call, frozenset(inner)):
                return False
            inner.add(t[1])
        return is_host_data(r[1], read, host_name, qualify, local_call, frozenset(inner))
    if tag == "call":
        args = r[3] if len(r) > 3 else None
        q = qualify(r[1])
        if q is not None:
            if q.startswith(_HOST_CALL_PREFIXES) or q in _HOST_CALLS:
                return True
            if q == "jax.device_put" and len(r[2]) >= 2 and _one_device(r[2][1], read, qualify):
                return True  # on one device of this process: a single-device array, local to it
            if q in _HOST_IF_ARGS_CALLS or q.startswith(_ARRAY_OP_PREFIXES):
                return args is not None and all(host(a) for a in args)
            return local_call(node)
        f = read(r[1])
        if f[0] == "attr":
            if f[2] in _HOST_METHODS:
                return True
            if host(f[1]):  # a method of a numpy array (`x.reshape(...)`, `x.astype(...)`)
                return True
        return local_call(node)
    return False


# Calls that make the same value everywhere from constant arguments: conversions and displays,
# and numpy / jax.numpy constructors (`np.full((1,), 7)`), not those that draw numbers or read files.
_CONSTANT_BUILTINS = frozenset({"int", "float", "bool", "str", "tuple", "list", "range"})
_CONSTANT_ARRAY_MODULES = ("numpy.", "jax.numpy.")
_NOT_CONSTANT_ARRAY_CALLS = ("numpy.random.", "numpy.load", "numpy.fromfile", "numpy.loadtxt", "numpy.genfromtxt",
                             "numpy.memmap", "jax.numpy.load")


def is_constant(node: object, read: Reader, const_name: HostName, qualify: Qualify,
                is_project: Callable[[str], bool]) -> bool:
    """Whether `node` has the same value on every process by construction: literals (not
    f-strings: they format values), `True`/`False`/`None`, names the pass has seen bound to a
    constant (`const_name`), a library's attributes (`np.int32`; not the project's: `is_project`),
    displays, arithmetic and conversions of constants, and numpy / jax.numpy constructors given
    constants (`np.full((1,), 7, dtype=np.int32)`), not those that draw numbers or read files."""
    def const(n: object) -> bool:
        return is_constant(n, read, const_name, qualify, is_project)

    r = read(node)
    tag = r[0]
    if tag in ("number", "string"):
        return True
    if tag == "other":
        return r[1] in ("imaginary", "simplestring", "constant")
    if tag == "name":
        return r[1] in ("True", "False", "None") or const_name(r[1])
    if tag == "attr":
        q = qualify(node)
        return q is not None and not is_project(q)
    if tag in ("tuple", "seq"):
        return all(const(e) for e in r[1])
    if tag == "binop":
        return const(r[2]) and const(r[3])
    if tag == "unary":
        return len(r) > 2 and const(r[2])
    if tag == "call":
        q = qualify(r[1]) or ""
        return (q in _CONSTANT_BUILTINS or q.startswith(_CONSTANT_ARRAY_MODULES)
                and not q.startswith(_NOT_CONSTANT_ARRAY_CALLS)) and all(const(a) for a in r[3])
    return False


# Methods that change their receiver in place: numpy arrays' in-place methods, and the mutators
# of lists, dicts, sets and deques (`MUTATORS`). Any other method of a value (`a.sum()`,
# `a.astype(t)`, `a.copy()`) returns a new one and leaves it as it was.
_IN_PLACE_METHODS = MUTATORS | frozenset({"fill", "put", "sort", "resize", "itemset", "setflags", "partition",
                                          "pop", "popitem", "remove", "discard", "clear", "reverse",
                                          "popleft", "rotate"})
IN_PLACE_METHODS = _IN_PLACE_METHODS
# Library functions that write into one of their arguments (its position): numpy's in-place ones.
_WRITES_INTO = {"numpy.copyto": 0, "numpy.put": 0, "numpy.place": 0, "numpy.putmask": 0, "numpy.fill_diagonal": 0,
                "numpy.random.shuffle": 0, "random.shuffle": 0}


def written_arguments(node: object, read: Reader, qualify: Qualify, argument: Callable, is_project: Callable[[str], bool]) -> list:
    """The argument nodes a call may write into, so that what they held before is no longer
    known to be what they hold after: the receiver of an in-place method (`a.fill(x)`,
    `a.sort()`, `xs.append(v)`; not `a.sum()`, `a.astype(t)`: `_IN_PLACE_METHODS`), an `out=`
    argument, the destination of numpy's in-place functions (`np.copyto(dst, src)`), and every
    argument of a function (not a method) the engine cannot tell is a library's (a project
    function, an unknown callee: it may fill what it is given); not those of calls known to change nothing
    (`knowledge.NON_MUTATING_CALLS`)."""
    r = read(node)
    func = r[1]
    out = [] if (o := argument(node, 1 << 30, "out")) is None else [o]
    f = read(func)
    if f[0] == "attr" and qualify(func) is None:
        return out + [f[1]] if f[2] in _IN_PLACE_METHODS else out  # (a method of a value)
    q = qualify(func)
    if q in K.NON_MUTATING_CALLS:
        return out
    if q in _WRITES_INTO:
        dst = argument(node, _WRITES_INTO[q], "a" if q != "numpy.copyto" else "dst")
        return out + ([dst] if dst is not None else [])
    if q is None or is_project(q):
        return out + list(r[3])
    return out


def _one_device(node: object, read: Reader, qualify: Qualify) -> bool:
    """`jax.local_devices()[i]`, `jax.devices()[i]`: one device (not a sharding). An array put
    there lives on that device alone, so work on it is that process's own."""
    r = read(node)
    if r[0] != "subscript":
        return False
    base = read(r[1])
    return base[0] == "call" and qualify(base[1]) in ("jax.local_devices", "jax.devices")


def host_iteration(it: object, read: Reader, host_name: HostName, qualify: Qualify,
                   local_call: LocalCall = lambda n: False) -> bool:
    """`for x in it`: the elements of host data are host data."""
    return is_host_data(it, read, host_name, qualify, local_call)


# `jit_may_run_locally`'s third answer: the jitted function may capture global arrays, unknown.
CAPTURES_UNKNOWN = "captures"
# Written after the description of collective work taken to be so only because of that.
CAPTURES_NOTE = "(on process-local inputs; may capture global arrays)"


# Written after the description of a jitted call none of whose inputs is known to be a global
# array (`jitted_work`): it is cross-process work only if they, or what it captures, are.
UNKNOWN_INPUTS_NOTE = "(on inputs not known to be global arrays)"
# Keywords that place a jitted computation on explicit shardings: it runs where they say.
_SHARDING_JIT_KEYWORDS = frozenset({"in_shardings", "out_shardings", "in_axis_resources", "out_axis_resources"})
SHARDED = ", sharded"  # appended to a jit wrapper's kind in a callable's description


# The collective work of a helper that is collective only by calling a callable it is given (one
# of its callers passes a collective one): at a call passing no collective callable, a guess.
CALLBACK_WORK = "a collective callback passed as"


def callback_work(desc: str, passed: str | None, callee: str) -> str:
    """At a call of `callee`, whose collective work `desc` may be only the callable it is given
    (`CALLBACK_WORK`): that work when this call passes a collective callable (`passed`, its
    description: certain as far as that callable's own work is), else `desc` (a guess)."""
    if passed is None or not desc.startswith(CALLBACK_WORK):
        return desc
    # (a jitted callable gets its inputs from the helper: not known to be global arrays)
    return f"`{callee}()` → {jitted_work(passed, False)[0]}"


def argument_for(param: str, params: Sequence[str], offset: int, given: Collection[int | str]) -> int | str | None:
    """The key (its name, or its position after `offset` bound ones: `self`) under which a call
    passing `given` keys passes the parameter `param` of a function of `params`; None when it
    leaves it to its default."""
    if param in given:
        return param
    i = params.index(param) - offset if param in params else -1
    return i if i >= 0 and i in given else None


def callback_call_work(desc: str, callee: str, passed: Sequence[str | bool | None]) -> str | None:
    """At a call of `callee`, collective only through the callables it calls (`desc`: its work,
    `CALLBACK_WORK` named where this call's reader sees it): `passed`, for each parameter it calls, what this call passes there: a
    collective callable's description, False for one known to do no collective work (a lambda
    doing none, a project function doing none), None for anything else (its default, a value
    not known). The work of the first collective one (certain as far as it is); none when every
    one is known to do none; else `desc`, a guess."""
    first = next((p for p in passed if isinstance(p, str)), None)
    if first is not None:
        return callback_work(CALLBACK_WORK, first, callee)
    return None if passed and all(p is False for p in passed) else desc


def jit_kind(kind: str, keywords: Collection[str]) -> str:
    """The kind a jitted callable's description names: a jit given explicit shardings
    (`jax.jit(f, out_shardings=...)`) is "jit, sharded": it runs where the shardings say. A pmap
    given no axis name (`jax.pmap(f)`, `@partial(jax.pmap, static_broadcasted_argnums=1)`; the
    caller names a positional one "axis_name") is "pmap, no axis name": a collective inside it
    (`lax.psum(x, "i")`) has no axis to run over, so its computation exchanges nothing between
    devices, and a process that runs it where the others do not waits for none of them
    (`NO_AXIS_PMAP` in `evidence`: JAX asks every process to run the same pmaps in order, which
    only a collective needs)."""
    if kind in LOCAL_JIT_KINDS and _SHARDING_JIT_KEYWORDS & set(keywords):
        return f"{kind}{SHARDED}"
    if kind in PMAP_KINDS and "axis_name" not in keywords:
        return f"{kind}{NO_AXIS}"
    return kind


def replicated_partition_spec(spec, read: Reader, qualify: Qualify) -> bool:
    """Whether `spec` is written as a `PartitionSpec` of no axis or only None's (`P()`, `P(None)`):
    every device holds the whole array."""
    r = read(spec) if spec is not None else ("other",)
    if r[0] != "call" or not (qualify(r[1]) or "").endswith("PartitionSpec") or len(r[2]) != len(r[3]):
        return False
    return all(read(a) == ("name", "None") for a in r[2])


def fully_replicated_spec(node, read: Reader, qualify: Qualify, argument) -> bool:
    """Whether a sharding constructor's call (`NamedSharding(mesh, P())`, `P(None, None)`) names a
    fully replicated sharding: its spec is a `PartitionSpec` of no axis or only None's. Both passes
    ask (a sharding stored in an attribute, `self.rep = NamedSharding(mesh, P())`, stays one)."""
    return replicated_partition_spec(argument(node, 1, "spec"), read, qualify)


def jitted_work(desc: str, global_input: bool) -> tuple[str, bool]:
    """Applying the jitted callable `desc` ("`step` (jit)"): (the collective work's description,
    whether that is certain). A `jit` runs where its inputs live: with an input known to be a global
    array it is certainly cross-process work; otherwise (parameters, attributes, host data, local
    devices) only if those inputs or what it captures are global arrays — a guess, whose result is
    not known to be a global array either. `pmap`/`shard_map` span every process by contract, and a
    jit given explicit shardings runs on them: certain."""
    if global_input or callable_kind(desc) not in LOCAL_JIT_KINDS or UNKNOWN_INPUTS_NOTE in desc or " → " in desc:
        # (a helper's work, "`f()` → ...": decided where the index summarized it, not again here)
        return desc, UNKNOWN_INPUTS_NOTE not in desc and CAPTURES_NOTE not in desc and NO_AXIS not in desc \
            and NO_REDUCTION not in desc
    return f"{desc} {UNKNOWN_INPUTS_NOTE}", False


def known_global_inputs(desc: str) -> str:
    """The work `desc` of a helper whose jitted work runs on a parameter, at a call passing a global
    array for it: certain."""
    return desc.replace(f" {UNKNOWN_INPUTS_NOTE}", "", 1)


def join_hostable(a: bool | str, b: bool | str) -> bool | str:
    """Of two jitted callables joined: the weaker claim (False < CAPTURES_UNKNOWN < True)."""
    if a is False or b is False:
        return False
    return True if a is True and b is True else CAPTURES_UNKNOWN


def jit_may_run_locally(kind: str, keywords: Collection[str], target: object | None, read: Reader, qualify: Qualify,
                        closes_over_host_only: Callable[[str], bool]) -> bool:
    """Whether a function jitted this way (`jax.jit(target, **keywords)`, or a decorator) can run
    on this process alone: its computation runs where its inputs live unless its wrapper spans
    every process (`pmap`, `shard_map`), a keyword may place it (`in_shardings`, `device`, ...),
    or the function closes over values that may be global arrays. The target must be a library
    function or a project function that reads only host data from enclosing scopes
    (`closes_over_host_only(qualified name)`) to be certain; anything else (a bound method, a
    lambda) may close over global arrays: `CAPTURES_UNKNOWN`."""
    if kind not in LOCAL_JIT_KINDS or any(k not in _PLACEMENT_FREE_JIT_KEYWORDS for k in keywords):
        return False
    if target is None:
        return True  # a decorator: the caller checks the decorated function
    q = qualify(target)
    if q is None:
        # A bound method, a lambda, a local function: what it captures (the instance's
        # attributes, enclosing variables) is not known. Given process-local inputs it is
        # collective work only if it captures a global array: a guess (`CAPTURES_UNKNOWN`).
        return CAPTURES_UNKNOWN
    if q.split(".")[0] in LIBRARY_ROOTS:
        return True
    return closes_over_host_only(q)  # (a module's function: what it reads is known)


def jitted_call_is_local(hostable: bool | str, arg_nodes: Collection[object] | None, is_host: Callable[[object], bool],
                         mesh_context: bool) -> bool:
    """A call of a jitted function is process-local work (not cross-process) when the function can
    run locally (`jit_may_run_locally`), every argument is host data, and no mesh context is in
    force in the file (`with mesh:`, `use_mesh`, `set_mesh` place computations on the mesh)."""
    return hostable is True and not mesh_context and arg_nodes is not None and all(is_host(a) for a in arg_nodes)


def callable_kind(desc: str | None) -> str | None:
    """The wrapper kind of a jitted callable's description ("`step` (pmap)" -> "pmap")."""
    if not desc or not desc.endswith(")"):
        return None
    return desc[desc.rfind("(") + 1:-1]


def result_is_local(kind: str | None) -> bool:
    """Whether the result of applying a function jitted this way is process-local data (`pmap`'s
    outputs are sharded over this process's local devices only), not a global array."""
    return kind in LOCAL_RESULT_KINDS


def arg_locality(args: Collection[tuple[str, object]], read: Reader, host_name: HostName, qualify: Qualify,
                 local_call: LocalCall, params_of: Callable[[str], Collection[str] | None] = lambda n: None,
                 ) -> tuple[list[str], dict[str, list[str]]]:
    """Where a call's arguments live, for analysing the callee in this call's context: the keys
    (positions "0", "1", ... and keyword names) of the arguments that are host data, and, for
    those that are host data provided some of the enclosing function's parameters are
    (`params_of(name)`: the parameters whose locality the name's value has), key -> those
    parameters."""
    hosts: list[str] = []
    needs: dict[str, list[str]] = {}
    for key, node in args:
        used: set[str] = set()

        def name_is_host(n: str, used: set[str] = used) -> bool:
            if host_name(n):
                return True
            ps = params_of(n)
            if ps:
                used.update(ps)
                return True
            return False

        if is_host_data(node, read, name_is_host, qualify, local_call):
            if used:
                needs[key] = sorted(used)
            else:
                hosts.append(key)
    return hosts, needs


def mesh_context_in(source: str) -> bool:
    """Whether a file enters or sets a mesh context anywhere (conservatively, by its text)."""
    low = source.lower()
    if "mesh" not in low and "me\u017fh" not in low:
        return False  # every match spells "mesh" (`ſ` matches `s` when case is ignored): most files, cheaply
    if "me\u017fh" in low or len(low) != len(source):
        return bool(_MESH_CONTEXT.search(source))
    # Every match lies within one line that spells "mesh": only those lines are searched (the
    # pattern tried at every position of a long file was most of this). `low` has the source's
    # offsets (no character lowered into several); `^` and `\b` see the line's neighbours.
    i = low.find("mesh")
    while i >= 0:
        start = source.rfind("\n", 0, i) + 1
        end = source.find("\n", i)
        if end < 0:
            end = len(source)
        if _MESH_CONTEXT.search(source, start, end):
            return True
        i = low.find("mesh", end)
    return False
