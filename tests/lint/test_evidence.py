"""Evidence-graded findings (docs/lint.md, "Evidence"): every finding carries its chain from
source to sink; one guess in it makes the finding at most a "possible" warning; `--confidence` /
`confidence = ...` choose what is reported; JSON and SARIF carry the chain and the confidence.

The fixture pairs differ in one step: the certain version is an error, the guessed one a warning.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from cli_helpers import make_project, run_cli, run_json
from mcjax_lint.analysis import evidence
from mcjax_lint.engine import analyze_project
from mcjax_lint.model import Severity

HAZARDS = Path(__file__).resolve().parents[2] / "fixtures" / "lint" / "hazards"

# (certain fixture, guessed look-alike, rule, why the look-alike's chain has a guess)
PAIRS = [
    ("evidence_resolved_method.py", "evidence_method_by_name.py", "MCJ101", evidence.METHOD_BY_NAME),
    ("evidence_known_call.py", "evidence_unresolved_call.py", "MCJ103", evidence.UNRESOLVED_CALL),
    ("evidence_direct_call.py", "evidence_callback.py", "MCJ101", evidence.STORED_CALLABLE),
    ("evidence_file_offset_check.py", "evidence_shard_offset_check.py", "MCJ102", evidence.LAYOUT_CHECK),
    ("evidence_path_value.py", "evidence_file_at_path.py", "MCJ103", evidence.FILE_CONTENT),
    ("evidence_field_given.py", "evidence_replaced_field.py", "MCJ101", evidence.STORED_ATTRIBUTE),
    ("rank0_stats_pmap_reduces_over_axis.py", "rank0_stats_pmap_without_axis.py", "MCJ101", evidence.NO_AXIS_PMAP),
    ("rank0_sampler_pmap_reduces_in_body.py", "rank0_sampler_pmap_without_collective.py", "MCJ101",
     evidence.NO_REDUCTION_PMAP),
]


def _findings(name: str):
    path = HAZARDS / name
    findings, errors = analyze_project({str(path): path.read_text(encoding="utf-8")})
    assert errors == []
    return findings


@pytest.mark.parametrize("certain,guessed,code,why", PAIRS, ids=[f"{p[2]}-{p[1]}" for p in PAIRS])
def test_a_guess_in_the_chain_makes_the_finding_a_possible_warning(certain, guessed, code, why):
    [c] = _findings(certain)
    assert (c.code, c.severity, c.confidence) == (code, Severity.ERROR, "certain")
    assert all(s.certain for s in c.chain) and "possible" not in c.message
    [g] = _findings(guessed)
    assert (g.code, g.severity, g.confidence) == (code, Severity.WARNING, "guess")
    assert [s.why for s in g.chain if not s.certain] == [why]
    assert g.message.endswith("]") and f"[possible: {why}" in g.message
    # Source first, sink last, on lines of the file.
    assert "jax.process_index()" in g.chain[0].text and g.chain[-1].text.startswith(("collective work", "skipped"))
    assert all(s.line > 0 for s in g.chain)


def test_an_attribute_stored_again_from_an_agreed_value_is_a_guess_at_its_other_reads():
    # `cfg.seed = int(process_allgather(np.int32(cfg.seed))[0])`: the program makes the attribute
    # agree there; whether a read in a helper comes after that store is not followed (a guess,
    # naming the attribute). Stored again through a call that does not agree (`int(...)`),
    # the read stays certain.
    [c] = _findings("restored_attribute_copied_not_agreed.py")
    assert (c.code, c.severity, c.confidence) == ("MCJ101", Severity.ERROR, "certain")
    [g] = _findings("restored_attribute_agreed_by_allgather.py")
    assert (g.code, g.severity, g.confidence) == ("MCJ101", Severity.WARNING, "guess")
    [step] = [s for s in g.chain if not s.certain]
    assert step.why == evidence.RESTORED_ATTRIBUTE and step.text == "`.shuffle_seed`"


def test_a_method_an_override_makes_agree_is_a_guess_at_its_self_calls():
    # A base class's loop stops on `self.stop_requested()`, per process in the base; a subclass's
    # override that does collective work and returns one answer everywhere may be what runs (the
    # instance's class is not followed): a guess naming the override. An override that only
    # passes the base's answer on leaves it certain.
    [c] = _findings("overridden_stop_test_still_local.py")
    assert (c.code, c.severity, c.confidence) == ("MCJ102", Severity.ERROR, "certain")
    [g] = _findings("overridden_stop_test_agreed.py")
    assert (g.code, g.severity, g.confidence) == ("MCJ102", Severity.WARNING, "guess")
    [step] = [s for s in g.chain if not s.certain]
    assert step.why == evidence.OVERRIDDEN_METHOD and "AgreeingLoop.stop_requested" in step.text


def test_a_helper_reading_a_file_at_its_argument_is_a_guess_at_the_call():
    # The summary pass: a helper of another module returns what a file at the path it is given
    # holds; at a call with a per-process path, that is a guess placed at the call.
    files = {
        "settings.py": "def read_rounds(path):\n    with open(path) as f:\n        return int(f.read())\n",
        "train.py": (
            "import jax\nimport jax.numpy as jnp\nfrom settings import read_rounds\n\n"
            "step = jax.jit(lambda x: x + 1)\n\n"
            "def run(x):\n"
            "    x = jax.device_put(x, jax.sharding.NamedSharding(jax.sharding.Mesh(jax.devices(), ('d',)),"
            " jax.sharding.PartitionSpec()))\n"
            "    rounds = read_rounds(f'/runs/host_{jax.process_index()}/rounds.txt')\n"
            "    for _ in range(rounds):\n"
            "        x = step(x)\n"),
    }
    findings, errors = analyze_project(files)
    assert errors == []
    [f] = findings
    assert (f.code, f.severity, f.confidence) == ("MCJ103", Severity.WARNING, "guess")
    assert [(s.line, s.why) for s in f.chain if not s.certain] == [(9, evidence.FILE_CONTENT)]
    # A path agreed on every process reads the same file everywhere: nothing.
    files["train.py"] = files["train.py"].replace("host_{jax.process_index()}", "shared")
    assert analyze_project(files)[0] == []


def test_a_copy_with_one_field_per_process_is_a_guess_for_its_other_fields():
    # A helper returns `dataclasses.replace(cfg, seed=... + jax.process_index())` (a
    # namedtuple's `_replace`, a struct's keyword-only `.replace` alike): a branch of the caller on
    # another field of the copy is at most a possible finding, in either pass.
    helper = ("import dataclasses\nimport jax\n\n"
              "@dataclasses.dataclass(frozen=True)\nclass Hyper:\n    gan: bool = False\n    seed: int = 0\n\n"
              "def setup():\n    h = Hyper()\n    return {copy}\n")
    caller = ("from jax.experimental import multihost_utils\nfrom hps import setup\n\n"
              "def main():\n    h = setup()\n    if h.gan:\n        multihost_utils.sync_global_devices('gan')\n")
    for copy in ("dataclasses.replace(h, seed=h.seed + jax.process_index())",
                 "h._replace(seed=h.seed + jax.process_index())",
                 "h.replace(seed=h.seed + jax.process_index())"):
        findings, errors = analyze_project({"hps.py": helper.format(copy=copy), "train.py": caller})
        assert errors == []
        assert [(f.code, f.severity) for f in findings] == [("MCJ101", Severity.WARNING)], copy
        assert [s.why for s in findings[0].chain if not s.certain] == [evidence.STORED_ATTRIBUTE]
    # `str.replace(old, new)` is not a copy with fields: the whole value flows, as before.
    findings, _ = analyze_project({"hps.py": "import jax\n\ndef setup():\n    return f'h{jax.process_index()}'.replace('h', 'g')\n",
                                   "train.py": caller.replace("h.gan", "h")})
    assert [(f.code, f.severity) for f in findings] == [("MCJ101", Severity.ERROR)]


def test_an_unmatched_exception_type_is_a_guess():
    [f] = _findings("handler_emergency_checkpoint.py")
    assert f.code == "MCJ104" and f.severity == Severity.WARNING and f.confidence == "guess"
    # (and the shard's content, read at a path named by the process index: `FILE_CONTENT`)
    assert [s.why for s in f.chain if not s.certain] == [evidence.FILE_CONTENT, evidence.UNMATCHED_EXCEPTION]


def test_a_handler_naming_the_raised_class_is_certain():
    src = HAZARDS.joinpath("handler_emergency_checkpoint.py").read_text(encoding="utf-8")
    src = src.replace("except (OSError, ValueError):", "except StopIteration:")
    # (records this process holds for certain, not a file's read at its own path: FILE_CONTENT)
    src = src.replace('open(f"/data/train-{jax.process_index():05d}.jsonl")', "range(100 + jax.process_index())")
    [f] = analyze_project({"m.py": src})[0]
    assert f.code == "MCJ104" and f.confidence == "certain"
    assert f.severity == Severity.WARNING  # the rule's own severity: whether it raises is never known


PAIR_PROJECT = {name: (HAZARDS / name).read_text(encoding="utf-8")
                for name in ("evidence_known_call.py", "evidence_unresolved_call.py")}


def test_json_carries_the_chain_and_the_confidence(tmp_path):
    root = make_project(tmp_path / "p", PAIR_PROJECT)
    rc, findings, err = run_json(root, "--no-cache", ".")
    assert rc == 1, err
    by_file = {Path(f["path"]).name: f for f in findings}
    g = by_file["evidence_unresolved_call.py"]
    assert (g["severity"], g["confidence"]) == ("warning", "guess")
    assert set(g["chain"][0]) == {"line", "text", "certain", "why"}
    assert [(s["certain"], s["why"]) for s in g["chain"] if not s["certain"]] == [(False, evidence.UNRESOLVED_CALL)]
    c = by_file["evidence_known_call.py"]
    # Every step certain, but MCJ103's precision is medium: a warning unless configured.
    assert (c["severity"], c["confidence"]) == ("warning", "certain")
    assert all(s["certain"] and s["why"] is None for s in c["chain"])


def test_a_configured_severity_makes_a_certain_finding_of_a_medium_precision_rule_an_error(tmp_path):
    config = '[tool.mcjax.severity]\nMCJ103 = "error"\n'
    root = make_project(tmp_path / "p", PAIR_PROJECT, config)
    rc, findings, err = run_json(root, "--no-cache", ".")
    assert rc == 1, err
    by_file = {Path(f["path"]).name: f["severity"] for f in findings}
    # A guess stays a warning whatever the configuration says.
    assert by_file == {"evidence_known_call.py": "error", "evidence_unresolved_call.py": "warning"}


def test_sarif_carries_rank_precision_and_the_chain_as_a_code_flow(tmp_path):
    import json

    root = make_project(tmp_path / "p", PAIR_PROJECT)
    out = run_cli(root, "--no-cache", "--format", "sarif", ".")
    assert out.returncode == 1, out.stderr
    results = {Path(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name: r
               for r in json.loads(out.stdout)["runs"][0]["results"]}
    g, c = results["evidence_unresolved_call.py"], results["evidence_known_call.py"]
    assert (g["level"], g["rank"], g["properties"]["precision"]) == ("warning", 50.0, "medium")
    assert (c["level"], c["rank"], c["properties"]["precision"]) == ("warning", 70.0, "medium")
    rules = {r["id"]: r for r in json.loads(out.stdout)["runs"][0]["tool"]["driver"]["rules"]}
    assert (rules["MCJ103"]["defaultConfiguration"]["level"], rules["MCJ103"]["properties"]["precision"]) == \
        ("warning", "medium")
    assert (rules["MCJ101"]["defaultConfiguration"]["level"], rules["MCJ101"]["properties"]["precision"]) == \
        ("error", "high")
    steps = g["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [s["properties"]["certain"] for s in steps].count(False) == 1
    assert all(s["location"]["physicalLocation"]["region"]["startLine"] > 0 for s in steps)
    assert "[guess: " in next(s for s in steps if not s["properties"]["certain"])["location"]["message"]["text"]


def test_text_shows_the_chain_on_one_line(tmp_path):
    root = make_project(tmp_path / "p", PAIR_PROJECT)
    out = run_cli(root, "--no-cache", "evidence_unresolved_call.py")
    chain = [ln for ln in out.stdout.splitlines() if ln.startswith("  = chain: ")]
    assert len(chain) == 1 and " → " in chain[0] and f"[guess: {evidence.UNRESOLVED_CALL}]" in chain[0]


def _codes(findings):
    return sorted((Path(f["path"]).name, f["severity"]) for f in findings)


def test_confidence_certain_reports_only_certain_findings(tmp_path):
    root = make_project(tmp_path / "p", PAIR_PROJECT)
    rc, findings, _ = run_json(root, "--no-cache", "--confidence", "certain", ".")
    assert rc == 1 and _codes(findings) == [("evidence_known_call.py", "warning")]
    # The same from the configuration; the command line overrides it.
    root2 = make_project(tmp_path / "q", PAIR_PROJECT, '[tool.mcjax]\nconfidence = "certain"\n')
    rc, findings, _ = run_json(root2, "--no-cache", ".")
    assert _codes(findings) == [("evidence_known_call.py", "warning")]
    rc, findings, _ = run_json(root2, "--no-cache", "--confidence", "all", ".")
    assert _codes(findings) == [("evidence_known_call.py", "warning"), ("evidence_unresolved_call.py", "warning")]
    # Only a guessed finding left: nothing reported, exit 0.
    rc, findings, _ = run_json(root2, "--no-cache", "evidence_unresolved_call.py")
    assert (rc, findings) == (0, [])


def test_a_suppressed_guess_is_not_an_unused_suppression_under_certain(tmp_path):
    text = PAIR_PROJECT["evidence_unresolved_call.py"].replace("# expect: MCJ103", "# mcjax: ignore[MCJ103]")
    root = make_project(tmp_path / "p", {"m.py": text}, '[tool.mcjax]\nconfidence = "certain"\n')
    rc, findings, err = run_json(root, "--no-cache", ".")
    assert (rc, findings) == (0, []), err


def test_a_severity_override_cannot_make_a_guess_an_error(tmp_path):
    root = make_project(tmp_path / "p", PAIR_PROJECT, '[tool.mcjax.severity]\nMCJ103 = "error"\n')
    rc, findings, _ = run_json(root, "--no-cache", ".")
    assert _codes(findings) == [("evidence_known_call.py", "error"), ("evidence_unresolved_call.py", "warning")]


def test_the_chain_survives_the_cache(tmp_path):
    root = make_project(tmp_path / "p", PAIR_PROJECT)
    _, cold, _ = run_json(root, ".")
    _, warm, _ = run_json(root, ".")
    assert cold == warm and all(f["chain"] for f in warm)


@pytest.mark.parametrize("value", ['"high"', "true", '["certain"]'])
def test_a_bad_confidence_is_one_line_and_exit_2(tmp_path, value):
    root = make_project(tmp_path / "p", {"m.py": "x = 1\n"}, f"[tool.mcjax]\nconfidence = {value}\n")
    out = run_cli(root, ".")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "'confidence' must be \"certain\" or \"all\"" in out.stderr


def test_a_bad_confidence_flag_is_a_usage_error(tmp_path):
    root = make_project(tmp_path / "p", {"m.py": "x = 1\n"})
    out = run_cli(root, "--confidence", "some", ".")
    assert out.returncode == 2 and "--confidence" in out.stderr


def test_a_misspelt_confidence_key_is_still_an_unknown_key(tmp_path):
    root = make_project(tmp_path / "p", {"m.py": "x = 1\n"}, '[tool.mcjax]\nconfidense = "all"\n')
    out = run_cli(root, ".")
    assert out.returncode == 2 and "unknown key 'confidense'" in out.stderr and "did you mean 'confidence'" in out.stderr


# ---------------------------------------------------------------------------------------------
# A program whose multi-process mode nothing selects (issue 19: programs that are not multi-process)

def _mode_program(select: str, gate: str = 'if cfg.backend != "multi":\n        return\n    ') -> dict[str, str]:
    comms = ("import sys\n\nimport jax\n\n"
             "class Config:\n    def __init__(self, backend=None):\n        self.backend = backend or 'local'\n\n"
             f"def bring_up(cfg):\n    {gate}jax.distributed.initialize()\n")
    main = ("import time\nfrom jax.experimental import multihost_utils\nfrom comms import Config, bring_up\n\n"
            f"def main():\n    {select}\n    bring_up(cfg)\n    t0 = time.time()\n"
            "    while True:\n        if time.time() - t0 > 60:\n            multihost_utils.sync_global_devices('stop')\n"
            "            break\n")
    return {"comms.py": comms, "main.py": main}


def test_a_multi_process_mode_nothing_selects_makes_the_finding_a_possible_warning():
    [c] = _findings("mode_selected_multi_process.py")
    assert (c.severity, c.confidence) == (Severity.ERROR, "certain")
    [g] = _findings("mode_never_selected_one_process.py")
    assert (g.code, g.severity, g.confidence) == ("MCJ101", Severity.WARNING, "guess")
    assert [s.why for s in g.chain if not s.certain] == [evidence.MODE_NOT_SELECTED]
    assert g.chain[-1].text == "several processes, brought up only where `backend` is 'multi'"
    assert f"[possible: {evidence.MODE_NOT_SELECTED}" in g.message


@pytest.mark.parametrize("select,gate,severity", [
    ("cfg = Config()", 'if cfg.backend != "multi":\n        return\n    ', Severity.WARNING),
    ("cfg = Config(backend='multi')", 'if cfg.backend != "multi":\n        return\n    ', Severity.ERROR),
    # (a value given at launch may be the mode's)
    ("import argparse; p = argparse.ArgumentParser(); p.add_argument('--backend'); cfg = Config(p.parse_args().backend)",
     'if cfg.backend != "multi":\n        return\n    ', Severity.ERROR),
    ("cfg = Config(backend=input())", 'if cfg.backend != "multi":\n        return\n    ', Severity.ERROR),
    # (the literal produced under another name, or in an arm, selects it; a tuple of the allowed values does not)
    ("kind = 'multi' if input() else 'local'; cfg = Config(kind)", 'if cfg.backend != "multi":\n        return\n    ',
     Severity.ERROR),
    ("ALLOWED = ('multi', 'local'); cfg = Config()", 'if cfg.backend != "multi":\n        return\n    ', Severity.WARNING),
    # (an `if mode == "multi":` around the call gates it as well; an `if` on anything else does not)
    ("cfg = Config()", 'if cfg.backend == "multi":\n        ', Severity.WARNING),
    ("cfg = Config()", "if cfg.backend:\n        ", Severity.ERROR),
    ("cfg = Config()", "", Severity.ERROR),
    # (a fact of the interpreter or a library is no mode: `sys.platform`, `__name__`)
    ("cfg = Config()", 'if sys.platform != "linux":\n        return\n    ', Severity.ERROR),
    ("cfg = Config()", 'if __name__ != "comms":\n        return\n    ', Severity.ERROR),
], ids=["unselected", "keyword", "command-line", "not-literal", "other-name", "allowed-values", "if-equal", "other-test", "ungated", "platform",
        "dunder"])
def test_whether_a_program_selects_its_multi_process_mode(select, gate, severity):
    findings, errors = analyze_project(_mode_program(select, gate))
    assert errors == []
    assert findings and {f.severity for f in findings} == {severity}


def test_a_module_selecting_the_mode_makes_the_programs_importing_it_multi_process():
    files = _mode_program("cfg = Config()")
    # (a module of the program — here one the helper module imports — selects the mode)
    files["comms.py"] = "import presets\n" + files["comms.py"]
    files["presets.py"] = "MULTI = dict(backend='multi')\n"
    findings, _ = analyze_project(files)
    assert findings and {f.severity for f in findings} == {Severity.ERROR}
    # One that no module of the program imports (another entry point) does not.
    files["comms.py"] = files["comms.py"].replace("import presets\n", "")
    files["bench.py"] = "from comms import Config, bring_up\n\nbring_up(Config(backend='multi'))\n"
    findings, _ = analyze_project(files)
    assert findings and {f.severity for f in findings if f.path == "main.py"} == {Severity.WARNING}


def test_a_loop_counter_set_back_to_an_agreed_value_is_a_guess():
    # `epoch, recovered = synced_epoch, True; continue` under a per-process test in a `while`
    # loop on `epoch`: the iterations are redone; the sync tied to the counter's values
    # (`if epoch % k == 0:`) and the `continue` that skips it are a guess, never an error.
    got = {f.code: f for f in _findings("loop_counter_rewound_to_agreed_sync_point.py")}
    for code in ("MCJ101", "MCJ102"):
        assert (got[code].severity, got[code].confidence) == (Severity.WARNING, "guess")
        assert evidence.REWOUND_COUNTER in [s.why for s in got[code].chain if not s.certain]
    # Set back to a value each process keeps for itself: the counter differs by its value.
    got = {f.code: f for f in _findings("loop_counter_rewound_to_local_resume_point.py")}
    for code in ("MCJ101", "MCJ102"):
        assert (got[code].severity, got[code].confidence) == (Severity.ERROR, "certain")
    # Work every iteration issues is issued again once per redone iteration: still certain.
    got = {f.code: f for f in _findings("loop_counter_rewound_before_every_step_sync.py")}
    assert (got["MCJ102"].severity, got["MCJ102"].confidence) == (Severity.ERROR, "certain")


@pytest.mark.parametrize("test,arm,want", [
    ("step < n", "step = ckpt\ncontinue", {"step"}),
    ("step < n", "step, done = ckpt, True\ncontinue", {"step"}),
    ("step < n and not stop", "step = 0\ncontinue", {"step"}),
    ("step < n", "step = step + 1\ncontinue", set()),  # an advance
    ("step < n", "step = ckpt\nstep += 1\ncontinue", set()),
    ("step < n", "step = ckpt", set()),  # falls through
    ("i < n", "step = ckpt\ncontinue", set()),  # not the loop's counter
])
def test_which_names_a_continuing_arm_sets_back(test, arm, want):
    import ast

    from mcjax_lint.analysis import read_ast, read_cst, semantics
    import libcst as cst

    src = f"while {test}:\n    if c:\n" + "".join(f"        {x}\n" for x in arm.splitlines())
    w = cst.parse_module(src).body[0]
    rd = semantics.Statements(read_cst.read, read_cst.statements, read_cst.names_in, read_cst.same)
    assert semantics.rewound_counters(w.test, w.body.body[0].body, rd) == want
    a = ast.parse(src).body[0]
    rd = semantics.Statements(read_ast.read, read_ast.statements, read_ast.names_in, read_ast.same)
    assert semantics.rewound_counters(a.test, a.body[0].body, rd) == want


def test_every_spelling_of_an_interleaved_arange_share_grades_as_range_does():
    # `np.arange(rank, n, world)`, `jnp.arange(start=rank, stop=n, step=world)`, a loop over
    # `np.arange(rank, stop=n, step=world)`: with n agreed, the shares differ in length only where
    # n is no multiple of world (a guess, as for `range(rank, n, world)`); with n this process's
    # own, for certain. (Of `world * k`: no finding, `benign/arange_interleaved_share_of_multiple.py`.)
    got = {f.line: f for f in _findings("arange_interleaved_share_of_data_count.py")}
    for line in (21, 27, 32):
        assert (got[line].severity, got[line].confidence) == (Severity.WARNING, "guess")
        assert evidence.EQUAL_PIECES in [s.why for s in got[line].chain if not s.certain]
    assert got[40].confidence == "certain"
    from mcjax_lint.analysis import read_cst, semantics
    import libcst as cst

    def args(src):
        node = cst.parse_expression(src)
        return tuple(None if x is None else cst.Module([]).code_for_node(x)
                     for x in semantics.counting_arguments(node, read_cst.read, read_cst.argument))

    assert args("np.arange(n)") == (None, "n", None)
    assert args("np.arange(n, step=2)") == (None, "n", "2")
    assert args("np.arange(i, n, w)") == ("i", "n", "w")
    assert args("np.arange(i, stop=n, step=w)") == ("i", "n", "w")
    assert args("jnp.arange(start=i, stop=n, step=w)") == ("i", "n", "w")
