"""What the analysis knows and what it guesses: one definition for both passes and every rule.

A finding's *chain* runs from a source (`jax.process_index()`, a set's order, ...) through the
steps that carry it to the sink (the collective work, the shape, the branch). Each step is either
certain — a known source, a resolved call, a known collective, a value flowing by assignment —
or a guess the engine had to take to go on. The engine records each guess where it takes it:

- on a value: every source the value carries gets the guess (`mark`), so whatever is computed
  from it inherits it (`Src.guess`, not part of a source's identity);
- on collective work: the description of the work says how it was found (`COLLECTIVE_NOTES`),
  which survives being wrapped in helpers' descriptions (`helper() → .save() (...)`).

A rule grades its evidence from the chain (`rules/base.py`): `error` only when every step is
certain, otherwise at most `warning`, and the message says "possible".
"""

from __future__ import annotations


from mcjax_lint import knowledge as K
from mcjax_lint.analysis import kinds, semantics
from mcjax_lint.analysis.values import Src, Val, rekinded, replace

# Why a step is a guess (the texts users read in the chain).
METHOD_BY_NAME = "a method resolved by its name only (the receiver's type is unknown)"
WHOLE_CONTAINER = "a whole container taken as process-dependent because one element is"
STORED_CALLABLE = "a callable handed to other code, never seen called"
CACHED_PROPERTY = "a cached property, whose getter runs at an instance's first read only (this read may hit the cache)"
UNRESOLVED_CALL = "an unresolved call assumed to return something computed from its arguments"
UNMATCHED_EXCEPTION = "an exception whose type was not matched against the handler"
IMPLICIT_ATTRIBUTE = ("an attribute assigned elsewhere (another method, another reference to the object, a signal "
                      "handler) under a process-dependent condition or from a process-dependent argument of its own "
                      "method, taken as assigned before this read")
GLOBAL_STORE = ("a module-level name a function declares `global` and assigns (under a process-dependent condition "
                "or from a process-dependent value), taken as assigned before this read")
OVERRIDDEN_METHOD = ("a method whose result differs between processes, called on an instance whose class has a "
                     "subclass overriding it with one that returns the same value everywhere: which class's method "
                     "runs is not followed")
RESTORED_ATTRIBUTE = ("an attribute also stored again from a value computed from its own that agrees across "
                      "processes (`x.attr = broadcast(x.attr)`) in another function: whether this read comes after "
                      "that store is not followed")
ADVANCED_GENERATOR = ("a random generator held in an attribute, drawn from elsewhere by a process-dependent amount "
                      "(a size, or a draw under a per-process condition or loop), taken as drawn before this read")
ITERATED_BY_HELPER = ("an instance of a class that iterates process-local data (its `__iter__`/`__next__`), handed to "
                      "a helper, taken as iterated there (what the helper reads of it is not followed)")
METHOD_ARGUMENT = ("a method analysed with what one call passes it (the instance it runs on and the other calls "
                   "are not followed)")
HELPER_NOT_FOLLOWED = "a helper not followed"
PER_PROCESS_LAYOUT = ("a collective meant for per-process data, given values laid out in a set's order: the "
                      "processes' k-th entries belong to different elements where the result is read by position")
PER_PROCESS_LAYOUT_TEXT = "values laid out in a set's order"
ITERATED_ELSEWHERE = ("a set (or a list made in its order) iterated in another function, whose elements are "
                      "followed into the objects and attributes built from them: which loop reaches the "
                      "collective work, and in which order, is not followed")
ITERATED_ELSEWHERE_TEXT = "a set iterated in another function"
UNKNOWN_SET_ELEMENTS = "its order differs between processes only if they are strings, bytes or objects hashed by identity"
UNKNOWN_HASHED_TYPE = "it differs between processes only if the value is or holds a str/bytes, or is hashed by identity"
ENV_NOT_KNOWN_PER_PROCESS = ("an environment variable not known to differ by process (launchers usually set a variable "
                             "alike on every host; RANK, LOCAL_RANK, HOSTNAME, SLURM_PROCID, ... are per process)")
INVARIANT_CHECK = "a check its author says cannot fail (AssertionError, \"should never happen\"): it raises only if the program has a bug"
ARGUMENT_CHECK = ("a check of the function's own arguments (argument validation): it raises on one process only where "
                  "a caller passes it a value that fails the check there")
LAYOUT_CHECK = ("a check that this process's shard of a global array lies where its index says: the sharding, the "
                "same on every process, decides both, so it fails on one process only where the job is laid out "
                "otherwise than the program assumes")
LAYOUT_CHECK_TEXT = "a layout check"
ASSUMED_COLLECTIVE = "an unknown call assumed to be collective work (`assume-unknown-calls-collective`)"
SHARDS_OF_UNKNOWN_ARRAY = ("an array not known to be global: its shards on this process differ from the others' only if it "
                           "is sharded across processes")
UNKNOWN_INPUTS = ("a jitted function applied to inputs not known to be global arrays: it runs where its inputs "
                  "live, cross-process only if they (or what it captures) are global arrays")
CALLBACK_NOT_KNOWN = ("a helper collective only through the callable it is given, here given one not known to be "
                      "collective")
THREAD_STATE = ("another thread's progress read by a method's name (`.is_alive()`, `.is_set()`, `.done()`): it "
                "differs between processes, each scheduling its own threads, if the receiver is a thread, event, "
                "future or queue")
FILE_CONTENT = ("a file read (or whether it exists) at a path that differs between processes, taken as differing "
                "too: files at per-process paths often hold the same content (a copy of one config, a run "
                "folder's saved settings)")
FILE_CONTENT_CALL = "<file content>"  # (as EQUAL_PIECES_CALL, for `file_content`)
FILE_FAILURE = ("a file operation assumed able to fail on one process only (its local file missing, cut short or "
                "unreadable there)")
FILE_FAILURE_DESC = "a file operation that can fail on one process only"
FAILS_WHERE_RUN = ("a step of a `try` body run under a process-dependent condition, taken as able to fail there (then the "
                   "handler runs on those processes only; whether it fails is never known)")
METHOD_STORE = ("a method's store into an attribute of its object from its arguments (or under a condition on "
                "them), taken as made by this call (its other inputs, and whether the store runs, are not followed)")
HANDLED_FAILURE = ("an `except` handler that raises, in a block only some processes run: taken as raising where the "
                   "`try` body failed there (whether it fails is never known)")
HELPER_RAISES = ("a project function with a `raise` outside any `try` of its own, called in a block only some "
                 "processes run: taken as able to raise there (whether it raises is never known)")
CAPTURES_UNKNOWN = ("a jitted function given process-local inputs, taken as collective work because it may capture "
                    "global arrays (a bound method, a lambda, a closure)")
EQUAL_PIECES = ("a per-process piece of equal ones (`x[i::n]`, `range(i, stop, n)`), whose lengths differ only "
                "where the whole is no multiple of n")
KEYS_FROM_CONTENT = ("a container given a key only where this process's data meets a condition: its keys differ "
                     "between processes unless their data agree on it")
GROWN_FROM_CONTENT = ("a container grown (`xs.append(v)`) only where, or as often as, this process's data says: its "
                      "length differs between processes unless their data agree on it")
EQUAL_PIECES_TEXT = "a per-process piece of equal ones"
SOME_CONSTRUCTIONS = ("an attribute stored from what only some constructions of its class pass per-process (`DS(files)` "
                      "and `DS(files[rank::n])`): the instance iterated here taken as one of those (which construction "
                      "reaches it is not followed)")
HELPER_PARAMETER_PIECE = ("an instance made in a helper from its parameters, taken as made from what the helper's callers "
                          "pass for them (`split(ds, rank, world)` building `DS(ds.files[rank::world])`)")
SPLIT_POINTS = ("a per-process piece of a split at given points (`np.array_split(x, [k])[i]`), whose length the "
                "points set: the pieces' lengths differ unless the points are evenly spaced")
SPLIT_POINTS_TEXT = "a per-process piece of a split at given points"
SPLIT_POINTS_CALL = "<split points piece>"  # (as EQUAL_PIECES_CALL, for `split_points`)
# The call a summary writes for such a piece of a value it cannot resolve yet (`ProjectIndex.call_name`).
EQUAL_PIECES_CALL = "<equal pieces>"
STORED_ATTRIBUTE = ("a value stored into an attribute of an object a helper returns (`state.steps = len(items)`), "
                    "taken as what any attribute of it holds")
STORED_ATTRIBUTE_TEXT = "an attribute stored on a returned object"
STORED_ATTRIBUTE_CALL = "<stored attribute>"  # (as EQUAL_PIECES_CALL, for `stored_attribute`)
STORED_ELEMENT = ("a value put into a container an attribute holds (`self.buckets[k] = v`), taken as what a later "
                  "read of that attribute sees (the instance read may be another one)")
STORED_ELEMENT_TEXT = "a value put into an attribute's container"
STORED_ELEMENT_CALL = "<stored element>"  # (as EQUAL_PIECES_CALL, for `stored_element`)
ENDS_ITERATION = ("a method that raises StopIteration, given this process's data: taken as raising where that data "
                  "runs out (it may first agree with the other processes when to stop)")
MASK_BY_NAME = "an index taken as a boolean mask by its name (`x[mask]`), whose selection's length differs where its content does"
MASK_BY_NAME_TEXT = "an index named as a mask"
PADDED = ("an array padded (`np.pad`), whose rows a window `[:K]` cuts to K everywhere where the padding "
          "adds at least K")
PADDED_TEXT = "a padded array"
STACKED = ("a stack along another axis than the first (`np.stack(xs, axis=1)`), whose count a later reduction "
           "over that axis removes")
STACKED_TEXT = "a stack along another axis"
SHORT_WINDOW = ("a window `xs[:K]` of a sequence whose length differs between processes, K long only where "
                "every process holds K or more")
SHORT_WINDOW_TEXT = "a window of a sequence whose length differs"
POSSIBLY_EMPTY = ("data repeated forever (`itertools.cycle(xs)`, `ds.repeat()`), whose iterations end at once only on "
                  "a process whose data is empty")
POSSIBLY_EMPTY_TEXT = "data repeated forever"
POSSIBLY_EMPTY_CALL = "<repeated forever>"  # (as EQUAL_PIECES_CALL, for `possibly_empty`)
BOUNDED_COUNT = ("a loop bounded by a count every process agrees on (`zip(range(n), data)`), whose iterations differ "
                 "between processes only where a process's data runs out before n")
BOUNDED_COUNT_TEXT = "a loop bounded by an agreed count"
BOUNDED_COUNT_CALL = "<bounded count>"  # (as EQUAL_PIECES_CALL, for `bounded_count`)
RESUMED_AT_YIELD = ("complementary `if`s on one condition around a `yield` (`if not main: barrier()` ... `yield` ... "
                    "`if main: barrier()`): they issue the same work on every process only where the code run at the "
                    "yield (the `with` body, the generator's consumer) resumes it everywhere and does no collective "
                    "work there")
RESUMED_AT_YIELD_TEXT = "complementary `if`s around a `yield`"
REWOUND_COUNTER = ("a `while` loop's counter set back under a process-dependent condition to a value not known "
                   "to differ (`step = ckpt_step; continue`): the processes that rewind redo the iterations from "
                   "there, so they issue the work tied to the counter's values again only where the data makes them "
                   "rewind across it by different amounts")
REWOUND_COUNTER_TEXT = "a loop counter set back"
GATE_ARGUMENT = ("one arm passes a helper a constant that takes it past its early `return` into its collective "
                 "work, the other a value not known here, which may take it there as well")

MODE_NOT_SELECTED = ("a program taken as run by several processes, whose every `jax.distributed.initialize()` runs "
                     "only in a mode that nothing in it selects (a mode value tested against a literal that the "
                     "program never passes, assigns, returns or takes from its command line): it may be run as "
                     "one process, where nothing is cross-process work")


def mode_step_text(gate: str) -> str:
    """The chain's text for `MODE_NOT_SELECTED` (`gate`: "attr=L", `ProjectIndex.mode_not_selected`)."""
    attr, lit = gate.split("=", 1)
    return f"several processes, brought up only where `{attr}` is {lit!r}"


TIED_SORT_KEY = ("a stable sort by a key of few values (a truth value, a conditional of constants): the elements the "
                 "key ties keep the order they came in, which differs between processes only where two of them share "
                 "a key")
TIED_SORT_KEY_TEXT = "a sort whose key ties"

NO_AXIS_PMAP = ("a pmap given no axis name: no collective inside it has an axis to run over, so its devices "
                "exchange nothing and a process running it alone waits for no other (JAX asks every process to "
                "run the same pmaps in the same order, which only a collective needs)")
NO_REDUCTION_PMAP = ("a pmap whose body, as followed through the project's code, does no collective: its devices "
                     "exchange nothing unless library code it calls reduces over its axis (JAX asks every process to "
                     "run the same pmaps in the same order, which only a collective needs)")

# Markers the engine writes into a collective work's description when it guessed it.
BY_NAME_NOTE = "(resolved by method name)"
COLLECTIVE_NOTES = {
    "(unknown call assumed collective)": ASSUMED_COLLECTIVE,
    "passed as a callback": STORED_CALLABLE,
    BY_NAME_NOTE: METHOD_BY_NAME,
    semantics.CACHED_PROPERTY_NOTE: CACHED_PROPERTY,
    semantics.CAPTURES_NOTE: CAPTURES_UNKNOWN,
    semantics.UNKNOWN_INPUTS_NOTE: UNKNOWN_INPUTS,
    semantics.CALLBACK_WORK: CALLBACK_NOT_KNOWN,
    semantics.NO_AXIS + ")": NO_AXIS_PMAP,
    semantics.NO_REDUCTION + ")": NO_REDUCTION_PMAP,
}

# `lax` collectives run only inside a mapped computation (`pmap`, `shard_map`) being traced: reached
# from host code, the work every process must run is that computation's application, which is
# where the chain should end; by themselves, a guess.
TRACED_COLLECTIVE = ("a `lax` collective, which runs only inside a mapped computation (`pmap`, `shard_map`): "
                     "collective work where that computation is applied")
COLLECTIVE_NOTES.update({desc: TRACED_COLLECTIVE for q, desc in K.COLLECTIVE_CALLS.items() if q.startswith("jax.lax.")})

MAX_GUESSES = 3  # per source: enough to explain it, bounded for speed


def mark(v: Val, why: str, text: str, line: int = 0) -> Val:
    """`v` with every source it carries marked as reached through a guess (`why`), taken at
    `text` (line `line` of the file being analysed, 0 when elsewhere)."""
    if not (v.pd or v.pdc or v.order or v.hash or v.shape or v.tree or v.items is not None):
        return v
    step = (line, text, why)

    def m(s: frozenset[Src]) -> frozenset[Src]:
        if not s:
            return s
        return frozenset(x if step in x.guess or len(x.guess) >= MAX_GUESSES else replace(x, guess=x.guess + (step,))
                         for x in s)

    items = tuple(mark(x, why, text, line) for x in v.items) if v.items is not None else None
    return replace(v, pd=m(v.pd), pdc=m(v.pdc), order=m(v.order), hash=m(v.hash), shape=m(v.shape),
                   tree=m(v.tree), items=items)


def file_failure(s: Src) -> Src:
    """The source of a failure of the file operation at `s`: a guess (`FILE_FAILURE`)."""
    return replace(s, guess=((s.line, "a file operation's failure", FILE_FAILURE),))


def derived(s: Src, parents: frozenset[Src]) -> Src:
    """A source the engine makes from values carrying `parents` (the longest of process-local
    elements): as certain as the most certain of them, so a guess taken to reach them stays."""
    if not parents or any(not p.guess for p in parents):
        return s
    return replace(s, guess=min((p.guess for p in parents), key=len))


def locate(v: Val, text: str, line: int) -> Val:
    """`v` with the guesses taken at `text` somewhere unknown (line 0: the project index does not
    know lines) placed at `line` of the file being analysed."""
    def m(s: frozenset[Src]) -> frozenset[Src]:
        if not any(g[0] == 0 and g[1] == text for x in s for g in x.guess):
            return s
        return frozenset(replace(x, guess=tuple((line, t, w) if ln == 0 and t == text else (ln, t, w)
                                               for ln, t, w in x.guess)) for x in s)

    return replace(v, pd=m(v.pd), pdc=m(v.pdc), order=m(v.order), hash=m(v.hash), shape=m(v.shape), tree=m(v.tree))


def collective_guess(desc: str) -> str | None:
    """Why the collective work `desc` describes is a guess, None when it is known."""
    for note, why in COLLECTIVE_NOTES.items():
        if note in desc:
            return why
    return None


def set_order_guess(s: Src) -> Src:
    """A source whose description says it is a guess (a set of unknown elements,
    `semantics.set_order` is GUESS; `hash()` of a value of unknown type, `semantics.hash_salt`
    is GUESS; an environment variable not known per-process, `knowledge.env_key_kind`): a guess.
    Both passes name such sources by these descriptions."""
    tied = semantics.TIED_SORT_DESC in s.desc
    if s.guess and not tied:
        return s
    g = s.guess
    if not g:
        for prefix, text, why in _GUESSED_DESCS:
            if s.desc.startswith(prefix):
                g = ((s.line if s.located else 0, text, why),)
                break
    if tied and not any(x[2] == TIED_SORT_KEY for x in g):
        g = g + ((s.line if s.located else 0, TIED_SORT_KEY_TEXT, TIED_SORT_KEY),)
    return replace(s, guess=g) if g is not s.guess else s


def per_process_layout(order: frozenset[Src], line: int = 0) -> frozenset[Src]:
    """The set orders of `order` that survive a collective meant for per-process data: those of a
    set of strings or bytes, each marked as a guess (`PER_PROCESS_LAYOUT`). A set of elements of
    unknown type (`UNKNOWN_SET_ELEMENTS`: often this process's own items, ids or steps, gathered
    to be joined) has an order as local as its content."""
    step = (line, PER_PROCESS_LAYOUT_TEXT, PER_PROCESS_LAYOUT)
    return frozenset((replace(s, guess=s.guess + (step,)) if len(s.guess) < MAX_GUESSES else s) for s in order if s.kind == kinds.SET_ORDER
                     and not any(g[2] == UNKNOWN_SET_ELEMENTS for g in s.guess))


def tied_order(order: frozenset[Src]) -> frozenset[Src]:
    """The order sources `order` of a sequence sorted by a key of few values
    (`semantics.sort_key_ties`): kept among the elements the key ties, as a guess
    (`TIED_SORT_KEY`: whether two elements share a key is not known)."""
    return frozenset(set_order_guess(x if semantics.TIED_SORT_DESC in x.desc
                                     else replace(x, desc=x.desc + semantics.TIED_SORT_DESC)) for x in order)


_GUESSED_DESCS = (
    (semantics.set_iteration_desc(semantics.GUESS), "iteration over a set", UNKNOWN_SET_ELEMENTS),
    (semantics.hash_desc(semantics.GUESS), "`hash()`", UNKNOWN_HASHED_TYPE),
    (K.GUESSED_ENV_DESC, "an environment variable", ENV_NOT_KNOWN_PER_PROCESS),
    (semantics.LOCAL_SHARDS_OF_UNKNOWN, "an array's local shards", SHARDS_OF_UNKNOWN_ARRAY),
    (semantics.THREAD_STATE_PREFIX, "a thread's state", THREAD_STATE),
)


def equal_pieces(v: Val, line: int = 0) -> Val:
    """What `x[i::n]` (or `range(i, stop, n)`) takes from the start `i` that carries `v`: which
    elements, process-local content for certain (`pdc`); how many, process-dependent only by a
    guess (`EQUAL_PIECES`): each of v's process-dependent sources, marked, in `pd`."""
    if not v.pd:
        return v
    return replace(mark(Val(pd=v.pd), EQUAL_PIECES, EQUAL_PIECES_TEXT, line), pdc=v.pdc | v.pd,
                   order=v.order, hash=v.hash, shape=v.shape, tree=v.tree)


def split_points(v: Val, line: int = 0) -> Val:
    """What `np.array_split(x, points)[i]` takes from the index `i` that carries `v`: which
    elements, for certain (`pdc`); how many, process-dependent only by a guess (`SPLIT_POINTS`),
    as `equal_pieces` does for pieces of equal ones."""
    if not v.pd:
        return v
    return replace(mark(Val(pd=v.pd), SPLIT_POINTS, SPLIT_POINTS_TEXT, line), pdc=v.pdc | v.pd,
                   order=v.order, hash=v.hash, shape=v.shape, tree=v.tree)


def possibly_empty(v: Val, line: int = 0) -> Val:
    """How many times data carrying `v` repeated forever runs (`itertools.cycle(xs)`): never
    ending, unless xs is empty, when it ends at once: what made its count differ (its
    process-dependent value, its length), as a guess (`POSSIBLY_EMPTY`)."""
    # (a count alone: an element taken from it has none of these shapes, `Val.element`)
    counts = Val(pd=v.pd, shape=rekinded((s for s in v.shape if s.kind != kinds.ELEMENTS), kinds.LENGTH))
    return mark(counts, POSSIBLY_EMPTY, POSSIBLY_EMPTY_TEXT, line)


def bounded_count(v: Val, line: int = 0) -> Val:
    """How many tuples `zip(range(n), data)` gives, n the same on every process: n, unless data
    carrying `v` runs out first: what made data's count differ (its process-dependent value, its
    length), as a guess (`BOUNDED_COUNT`)."""
    counts = Val(pd=v.pd, shape=rekinded((s for s in v.shape if s.kind != kinds.ELEMENTS), kinds.LENGTH))
    return mark(counts, BOUNDED_COUNT, BOUNDED_COUNT_TEXT, line)


def file_content(v: Val, text: str = "a file read", line: int = 0) -> Val:
    """What a file read at a path carrying `v` holds (`semantics.FILE_READ_CALLS`): what `v`
    carries, as a guess (`FILE_CONTENT`: the files at different paths may hold the same). An
    order the paths come in stays certain: one listing's files, read in another order on each
    process, are other files at each position."""
    d = v.data()
    return replace(mark(replace(d, order=frozenset(), hash=frozenset()), FILE_CONTENT, text, line),
                   order=d.order, hash=d.hash)


def stored_attribute(v: Val, line: int = 0) -> Val:
    """What an object holds after a helper stored `v` into one of its attributes: `v`, as a guess
    (`STORED_ATTRIBUTE`: the attribute read later may be another one)."""
    return mark(v, STORED_ATTRIBUTE, STORED_ATTRIBUTE_TEXT, line)


def stored_element(v: Val, line: int = 0) -> Val:
    """What an attribute holds after a method put `v` into the container it holds: where `v`
    itself differs between processes (a per-process share, its length), content that differs, as
    a guess (`STORED_ELEMENT`); content alone put in (local shards, per-process numbers of one
    shape) is not followed."""
    return mark(Val(pdc=v.pd), STORED_ELEMENT, STORED_ELEMENT_TEXT, line) if v.pd else Val()


def length_only(v: Val) -> Val:
    """What a test of `v`'s length alone (`if piece:`, `len(piece)`) carries: `v` without the
    content sources that a piece of equal ones (`equal_pieces`) also holds as guessed length
    sources: which elements a piece holds is certain, how many only a guess."""
    twins = frozenset(replace(s, guess=tuple(g for g in s.guess if g[2] != EQUAL_PIECES))
                      for s in v.pd if any(g[2] == EQUAL_PIECES for g in s.guess))
    if not twins:
        return v
    return replace(v, pdc=frozenset(s for s in v.pdc if s not in twins))
