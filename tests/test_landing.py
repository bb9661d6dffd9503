"""A plan's landing prediction: kube-scheduler's greedy replay after the evictions, against the target."""
from __future__ import annotations

import yaml
from builders import node, pod, run_cli, state_of

from optisched.optimal.solve import OptimalOptions, solve_optimal
from optisched.preemption.landing import predict_landing
from optisched.profile import default_config

CFG = default_config()
OWNER = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u", "controller": True}]


def _tight() -> list[dict]:
    """small (priority 10) and big (priority 5, 2 CPUs) fit together only with small on n2; kube places
    small first, on the emptier n1 (LeastAllocated), and big is left without room."""
    return [node("n1", cpu="2"), node("n2", cpu="1"),
            pod("small").req(cpu="1").priority(10), pod("big").req(cpu="2").priority(5)]


def test_replay_flags_pods_kube_places_elsewhere():
    state = state_of(*_tight())
    r = solve_optimal(state, CFG, OptimalOptions(time_limit=5))
    landing = predict_landing(state, CFG, r.node_of)
    assert landing.target == {"default/small": "n2", "default/big": "n1"}
    assert landing.landed == {"default/small": "n1", "default/big": None}
    assert landing.differs == {"default/small": ("n2", "n1"), "default/big": ("n1", None)}


def test_replay_re_creates_owned_movers_and_drops_bare_ones():
    """A plan that moves an owned pod and evicts a bare one: the owned pod comes back pending and is
    placed by the replay; the bare one is gone."""
    objs = [node("n1", cpu="2"), node("n2", cpu="2"),
            pod("owned").req(cpu="1").set("metadata.ownerReferences", OWNER).on("n1"), pod("bare").req(cpu="1").on("n1")]
    state = state_of(*objs)
    node_of = state.pod_node.copy()
    node_of[state.pod_index["default/owned"]] = state.node_index["n2"]
    node_of[state.pod_index["default/bare"]] = -1
    landing = predict_landing(state, CFG, node_of)
    assert landing.target == {"default/owned": "n2"}
    assert landing.landed["default/owned"] in ("n1", "n2")
    assert "default/bare" not in landing.landed


def test_plan_file_carries_the_target_and_the_replay(tmp_path, capsys):
    src = tmp_path / "cluster.yaml"
    src.write_text(yaml.safe_dump_all([o.build() for o in _tight()]))
    plan = tmp_path / "plan.yaml"
    code, out, err = run_cli(["preempt", str(src), "--mode", "optimal", "--time-limit", "5", "--output", str(plan)],
                             capsys)
    assert code == 0, err
    (head,) = list(yaml.safe_load_all(plan.read_text()))
    assert head["target"] == {"default/small": "n2", "default/big": "n1"}
    assert {d["pod"]: d["landing"] for d in head["differs"]} == {"default/small": "n1", "default/big": None}
    assert "0 of 2 pod(s) land on the plan" in out and "(pending)" in out
