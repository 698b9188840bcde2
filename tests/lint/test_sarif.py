"""`--format sarif` is valid SARIF 2.1.0 (the OASIS schema, vendored in tests/data) and carries
what GitHub code scanning shows: rules with help, levels, regions, related locations, fixes."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from cli_helpers import demo_project, run_cli

from mcjax_lint.rules import RULES

SCHEMA = json.loads((Path(__file__).resolve().parents[1] / "data" / "sarif-schema-2.1.0.json").read_text())


def _validate(log: dict) -> None:
    cls = jsonschema.validators.validator_for(SCHEMA)
    cls.check_schema(SCHEMA)
    errors = sorted(cls(SCHEMA, format_checker=cls.FORMAT_CHECKER).iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])


def test_sarif_validates_and_describes_results(tmp_path):
    demo_project(tmp_path)
    (tmp_path / "pkg" / "broken.py").write_text("def f(:\n")
    out = run_cli(tmp_path, "--format", "sarif")
    assert out.returncode == 2  # the broken file; the others' results are still in the log
    log = json.loads(out.stdout)
    _validate(log)

    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "mcjax-lint"
    ids = [r["id"] for r in driver["rules"]]
    assert set(RULES) | {"MCJ900"} <= set(ids)
    for rule in driver["rules"]:
        assert rule["helpUri"].startswith("https://") and rule["helpUri"].endswith(f"rules/{rule['id']}.md")
        assert rule["shortDescription"]["text"]
        assert rule["help"]["markdown"].startswith(f"# {rule['id']}")  # the rule page itself

    results = run["results"]
    mcj101 = next(r for r in results if r["ruleId"] == "MCJ101")
    assert ids[mcj101["ruleIndex"]] == "MCJ101" and mcj101["level"] == "error"
    loc = mcj101["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"] == {"uri": "pkg/ckpt.py", "uriBaseId": "%SRCROOT%"}
    assert loc["region"]["startLine"] == 7 and loc["region"]["startColumn"] == 5
    assert mcj101["relatedLocations"], "the source of divergence and the collective are linked"
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"] == tmp_path.resolve().as_uri() + "/"

    fixable = next(r for r in results if r["ruleId"] == "MCJ201")
    change = fixable["fixes"][0]["artifactChanges"][0]
    assert change["replacements"][0]["insertedContent"]["text"]

    inv = run["invocations"][0]
    assert inv["executionSuccessful"] is False
    assert "syntax error" in inv["toolExecutionNotifications"][0]["message"]["text"]


def test_sarif_with_no_findings_is_valid(tmp_path):
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "ok.py").write_text("x = 1\n")
    out = run_cli(tmp_path, "--format", "sarif")
    assert out.returncode == 0
    log = json.loads(out.stdout)
    _validate(log)
    assert log["runs"][0]["results"] == []


LISTING_TWO_SINKS = '''import os
import jax
from jax.experimental import multihost_utils


def load(root, sharding):
    names = [n for n in os.listdir(root) if n.endswith(".npy")]
    for n in names:
        multihost_utils.sync_global_devices(f"load-{n}")
    return jax.device_put(names, sharding)
'''


def test_one_position_one_finding_every_chain_kept(tmp_path):
    """One origin reaching two sinks is one MCJ202 finding (as ruff: one diagnostic per rule and
    range); JSON keeps the other chain in `also`, SARIF as a second code flow, text as `= also:`."""
    (tmp_path / "load.py").write_text(LISTING_TWO_SINKS)
    found = json.loads(run_cli(tmp_path, "--format", "json", "--no-cache").stdout)
    mcj202 = [f for f in found if f["code"] == "MCJ202"]
    assert len(mcj202) == 1
    chains = [mcj202[0]["chain"]] + mcj202[0]["also"]
    sinks = {c[-1]["line"] for c in chains}
    assert sinks == {9, 10} and len(chains) == 2, chains
    assert {r["line"] for r in mcj202[0]["related"]} >= sinks
    log = json.loads(run_cli(tmp_path, "--format", "sarif", "--no-cache").stdout)
    _validate(log)
    res = [r for r in log["runs"][0]["results"] if r["ruleId"] == "MCJ202"]
    assert len(res) == 1 and len(res[0]["codeFlows"]) == len(chains)
    text = run_cli(tmp_path, "--no-cache").stdout
    assert text.count("MCJ202 [") == 1 and text.count("= also: ") == len(chains) - 1
