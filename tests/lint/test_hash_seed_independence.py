"""The findings do not depend on the order a set iterates in (the process's hash seed).

Sources are kept in frozensets, and a source's guesses are not part of its identity: where a
change of kind (an element of a container, an array's rows) or a move (a call site) makes two
sources one, which way survived was whichever the set's hash order met first, so a finding was
an error under some `PYTHONHASHSEED`s and a warning under others. Each run here is the real CLI
in a fresh interpreter with its own seed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from mcjax_lint.analysis import kinds, semantics  # noqa: F401 (semantics before values: values imports it)
from mcjax_lint.analysis.values import Src, Val, least_certain, most_certain

REPO = Path(__file__).resolve().parents[2]

# A dict from a helper holds an element whose shape differs only through a guess (a container
# literal holding the cut string); a value stored under another key carries the same source
# certainly. Reading a key takes an element: the two sources become one. Under seeds 0 and 2 main
# kept the certain way (an error), under 1, 3, 4 and 5 the guessed one (a warning).
PROGRAM = """\
import random

from jax.experimental import multihost_utils


def generate(prompts):
    return {"ids": [[len(p["content"])] for p in prompts]}


def rewards(answers):
    return [len(a) for a in answers]


def run(text, suffixes):
    cut = text[: int(len(text) * random.uniform(0.3, 0.5))]
    out = generate([{"role": "user", "content": cut}])
    answers = [cut + s for s in suffixes]
    out["scores"] = rewards(answers)
    multihost_utils.process_allgather(out["ids"])
"""


def _lint(path: Path, seed: int) -> list:
    env = {**os.environ, "PYTHONHASHSEED": str(seed), "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "mcjax_lint", str(path), "--format", "json", "--no-cache", "--exit-zero"],
                         capture_output=True, text=True, env=env, timeout=120, check=True)
    data = json.loads(out.stdout)
    findings = data if isinstance(data, list) else data["findings"]
    return [(f["line"], f["code"], f["severity"], f["message"]) for f in findings]


def test_findings_are_the_same_under_every_hash_seed(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    runs = {seed: _lint(path, seed) for seed in range(6)}
    assert runs[0], "the program's gather is reported"
    assert all(r == runs[0] for r in runs.values()), runs
    # the way kept is the least certain: the merge of two sources by a change of kind is no
    # evidence that the certain one reaches the gather (a warning, as most seeds gave on main)
    assert [(line, code, sev) for line, code, sev, _ in runs[0]] == [(19, "MCJ301", "warning")]


def test_two_sources_a_change_of_kind_makes_one_keep_the_least_certain_way():
    """Whatever order the two are met in, the element keeps the one with more guesses; the same
    source reached two ways (a join) keeps the one with fewer; ties go by the guesses' text."""
    certain = Src(3, 4, "a slice bounded by unseeded `random.uniform()`", kinds.ARRAY_SHAPE)
    guessed = replace(certain, kind=kinds.ELEMENTS, guess=((5, "a container literal", "why"),))
    for pair in ((certain, guessed), (guessed, certain)):
        (kept,) = Val(shape=frozenset(pair)).element().shape
        assert kept.guess == guessed.guess
    a = replace(certain, guess=((5, "a", "why"),))
    b = replace(certain, guess=((5, "b", "why"),))
    assert [x.guess for x in most_certain([a, b])] == [x.guess for x in most_certain([b, a])] == [a.guess]
    assert [x.guess for x in least_certain([a, b])] == [x.guess for x in least_certain([b, a])] == [b.guess]
    assert [x.guess for x in most_certain([certain, a])] == [()]
