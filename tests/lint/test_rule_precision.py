"""Each rule's declared PRECISION is what the sealed halves measure (benchmarks/rule_precision.py),
and a medium-precision rule reports a certain finding as a warning unless configured."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from mcjax_lint.config import LintConfig, RuleFilter
from mcjax_lint.model import Severity
from mcjax_lint.rules import RULES

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import rule_precision  # noqa: E402


def test_every_declared_precision_is_the_measured_one():
    assert rule_precision.result_files(), "no opened sealed half to measure on"
    assert rule_precision.disagreements() == []


def _result(tmp_path: Path, name: str, rows: list, errors: list) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "result_sealed.json").write_text(json.dumps(
        {"programs": {"rows": rows}, "codebases": {"o/r": {"errors": errors}}}))
    return d / "result_sealed.json"


def test_the_measure_counts_hazard_lines_look_alikes_and_verdicts(tmp_path):
    rows = [{"hazard_lines": [20, 24], "hazard_findings": [["MCJ101", "error", 23], ["MCJ101", "error", 60],
                                                           ["MCJ101", "warning", 20]],
             "correct_findings": [["MCJ101", "error", 23], ["MCJ102", "warning", 5]]}]
    errors = [{"code": "MCJ101", "review": {"verdict": "real"}}, {"code": "MCJ101", "review": {"verdict": "fragile"}},
              {"code": "MCJ101", "review": {"verdict": "false-positive"}}, {"code": "MCJ101", "review": {"verdict": "disputed"}}]
    got = rule_precision.tally([_result(tmp_path, "sealed99", rows, errors)])
    assert got["MCJ101"] == Counter(right=3, wrong=2, elsewhere=1)
    assert "MCJ102" not in got  # warnings count neither way


def test_a_certain_finding_of_a_medium_rule_counts_as_its_error(tmp_path):
    medium = next(c for c, i in sorted(RULES.items()) if i.precision == "medium")
    rows = [{"hazard_lines": [10], "hazard_findings": [[medium, "warning", 10, "certain"], [medium, "warning", 11, "guess"]],
             "correct_findings": [[medium, "warning", 10, "certain"], ["MCJ101", "warning", 3, "certain"]]}]
    got = rule_precision.tally([_result(tmp_path, "sealed98", rows, [])])
    assert got[medium] == Counter(right=1, wrong=1)
    assert "MCJ101" not in got  # a high-precision rule's warning is a warning


@pytest.mark.parametrize("right,wrong,want", [(0, 4, "high"), (2, 3, "medium"), (3, 3, "high"), (9, 22, "medium")])
def test_medium_means_mostly_wrong_over_enough_errors(right, wrong, want):
    assert rule_precision.measured_precision(Counter(right=right, wrong=wrong)) == want


def test_a_medium_precision_rule_is_a_warning_unless_configured():
    medium = sorted(c for c, i in RULES.items() if i.precision == "medium")
    high = sorted(c for c, i in RULES.items() if i.precision == "high" and i.severity == Severity.ERROR)
    assert medium and high
    plain = RuleFilter(LintConfig())
    assert plain.severity(medium[0], Severity.ERROR) == Severity.WARNING
    assert plain.severity(high[0], Severity.ERROR) == Severity.ERROR
    assert plain.severity(medium[0], Severity.INFO) == Severity.INFO
    configured = RuleFilter(LintConfig(severity={medium[0]: Severity.ERROR}))
    assert configured.severity(medium[0], Severity.ERROR) == Severity.ERROR
