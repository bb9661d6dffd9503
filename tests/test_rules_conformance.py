"""Each rule alone against the real kube-scheduler: every recorded cycle, every node.

The snapshot is positioned as the real scheduler had it at that cycle (earlier choices assumed,
victims removed), so a rule's filter verdicts, codes and reasons, and its raw, normalized and
weighted scores and PreScore skips, must equal the recorded ones exactly.
"""
from __future__ import annotations

import re

import numpy as np
import pytest
from helpers.replay import case_names, replay

from optisched.framework import Code
from optisched.registry import REGISTRY, instantiate


def _filter_mismatches(step, name, rule) -> list[str]:
    passed, fails = step.filter_expectation(name)
    cs = step.cycle_state
    st = rule.pre_filter(cs)
    if st.code not in (Code.SUCCESS, Code.SKIP):
        return []  # a PreFilter rejection is compared by the whole-run conformance test
    rows = np.concatenate([passed, step.rows(list(fails))]) if fails else passed
    if len(rows) == 0:
        return []
    res = None if st.code == Code.SKIP else rule.filter(cs, rows)
    out = []
    for k, r in enumerate(rows):
        node = step.state.node_names[r]
        code = 0 if res is None else int(res.code[k])
        if node in fails:
            f = fails[node]
            got = (Code(code).label if code else "pass", sorted(res.reasons_of(k)) if res is not None else [])
            if got != (f["code"], sorted(f["reasons"])):
                out.append(f"cycle {step.index} {node}: {got} != {(f['code'], f['reasons'])}")
        elif code:
            out.append(f"cycle {step.index} {node}: rejected, kube-scheduler let it pass")
    return out


def _score_mismatches(step, name, rule) -> list[str]:
    cyc = step.cycle
    if not (cyc.get("scored") and cyc.get("scores")):
        return []
    cs, feas = step.cycle_state, step.feasible
    skipped = rule.pre_score(cs, feas).code == Code.SKIP
    if skipped != (name in (cyc.get("skippedScorePlugins") or [])):
        return [f"cycle {step.index}: skip {skipped}"]
    if skipped:
        return []
    raw = rule.score(cs, feas)
    norm = rule.normalize(cs, raw)
    weight = cs.profile.score_weights[name]
    out = []
    for k, r in enumerate(feas):
        e = cyc["scores"][step.state.node_names[r]]
        got = (int(raw[k]), int(norm[k]), int(norm[k]) * weight)
        want = (e["raw"].get(name, 0), e["normalized"].get(name, 0), e["plugins"].get(name, 0))
        if got != want:
            out.append(f"cycle {step.index} {step.state.node_names[r]}: {got} != {want}")
    return out


@pytest.mark.parametrize("case", case_names())
def test_every_rule_matches_every_recorded_cycle(case):
    problems: dict[str, list[str]] = {}
    rules = None
    checked = 0
    for step in replay(case):
        if rules is None:
            rules = instantiate(step.cycle_state.snapshot, step.cycle_state.profile)
        filters, scores = rules
        for name, rule in filters.items():
            problems.setdefault(f"filter {name}", []).extend(_filter_mismatches(step, name, rule))
        for name, rule in scores.items():
            problems.setdefault(f"score {name}", []).extend(_score_mismatches(step, name, rule))
        checked += 1
    assert checked > 0
    bad = {k: v[:3] for k, v in problems.items() if v}
    assert not bad, bad


def test_every_registered_rule_has_a_test_module():
    """A rule module without its own unit tests is not done."""
    import pathlib

    tests = {p.stem for p in pathlib.Path(__file__).parent.glob("test_*.py")}
    text = "\n".join(p.read_text() for p in pathlib.Path(__file__).parent.glob("test_rules*.py"))
    for name in REGISTRY:
        # NodeDeclaredFeatures -> node_declared_features
        module = re.sub(r"(?<=[a-z])(?=[A-Z])", "_", name).lower()
        modules = {f"test_{name.lower()}", f"test_{module}"}
        assert name in text or modules & tests, f"{name} has no unit tests"
