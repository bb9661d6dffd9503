"""``optisched preempt``: which pods preemption evicts, by kube-scheduler's DefaultPreemption or by CP-SAT."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..errors import InputError
from . import common
from .options import (
    ClusterArg,
    ContextOpt,
    EvictOpt,
    FeatureGatesOpt,
    JsonOpt,
    KubeconfigOpt,
    MaxInputOpt,
    ProfileOpt,
    VersionOpt,
    mode_option,
    seed_option,
    time_limit_option,
    workers_option,
)


def preempt(
    cluster: ClusterArg = None,
    pod: Annotated[str | None, typer.Option("--pod", help="Only this pending pod (namespace/name).")] = None,
    all_pending: Annotated[bool, typer.Option("--all-pending", help="Every pending pod (the default).")] = False,
    mode: Annotated[str, mode_option("greedy (kube-scheduler's DefaultPreemption) | optimal (CP-SAT: minimal "
                                     "victims for --pod, treated as the head of the queue; the whole batch "
                                     "otherwise).")] = "greedy",
    cross_node: Annotated[bool, typer.Option("--cross-node", help="Optimal mode, one pod: victims may be on other "
                                             "nodes of the domain its anti-affinity or spread counts.")] = False,
    time_limit: Annotated[float, time_limit_option("Seconds for optimal mode.")] = 60.0,
    workers: Annotated[int, workers_option("CP-SAT workers.")] = 2,
    seed: Annotated[int, seed_option("CP-SAT random seed.")] = 0,
    profile: ProfileOpt = None,
    output: Annotated[Path | None, typer.Option(help="Write policy/v1 Eviction objects (YAML); optimal batch mode "
                                                "first writes the plan's target and kube-scheduler's replay.")] = None,
    as_json: JsonOpt = False,
    evict: EvictOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    max_input_size: MaxInputOpt = "4Gi",
    kubernetes_version: VersionOpt = None,
    feature_gates: FeatureGatesOpt = None,
) -> None:
    """Show which pods preemption evicts for which preemptors, with priorities and PDBs."""
    import yaml

    if pod and all_pending:
        raise InputError("give --pod or --all-pending, not both")
    if cross_node and (mode != "optimal" or not pod):
        raise InputError("--cross-node applies to optimal mode for one pod (--mode optimal --pod NS/NAME)")
    from ..policy.eviction import EvictionPolicy

    policy = EvictionPolicy.parse(evict)
    common.check_outputs({"--output": output}, cluster, profile)
    state, config, warnings = common.load(cluster, profile, kubeconfig, context, max_input_size,
                                          kubernetes_version, feature_gates)
    key = state.pods[common.pending_row(state, pod)].key if pod else None
    shown = common.err if str(output) == "-" else common.out  # --output -: the evictions on stdout, the table on stderr
    from ..interrupt import catching, cause, requested

    with catching():
        if mode == "optimal":
            doc, docs, failed = _preempt_optimal(state, config, key, cross_node, time_limit, workers, seed, as_json,
                                                 policy, shown)
        else:
            doc, docs, failed = _preempt_greedy(state, config, key, as_json, shown)
    if requested():
        doc["interrupted"] = True
        if not as_json:
            shown.print(f"interrupted ({cause()}): the answer so far", highlight=False)
    if as_json:
        common.print_json({**doc, "warnings": warnings})
    if failed:
        raise typer.Exit(common.EXIT_CHECK_FAILED)
    if output is not None:
        from ..outputs import write_text

        if output.suffix == ".json":  # one v1 List, as `kubectl get -o json` writes several objects
            common.write_json(output, {"apiVersion": "v1", "kind": "List", "items": docs})
        else:
            write_text(output, yaml.safe_dump_all(docs, sort_keys=False, explicit_start=True))
    common.stop_if_interrupted()


def _preempt_greedy(state, config, key: str | None, as_json: bool, console):  # type: ignore[no-untyped-def]
    from dataclasses import asdict

    from ..greedy.scheduler import GreedyOptions, GreedyScheduler
    from ..plans.plan import eviction_objects
    from ..preemption.made import preemptions
    from .progress import progress_bar
    from .render import render_preemptions

    sched = GreedyScheduler(state, config, GreedyOptions(interruptible=True))
    with progress_bar(common.err, "greedy mode", len(state.pending)) as advance:
        result = sched.run(progress=advance)
    plan = preemptions(result, sched.pdbs, key)
    if not as_json:
        render_preemptions(console, plan)
    return {"mode": "greedy", "preemptions": [asdict(p) for p in plan]}, eviction_objects(plan), False


def _preempt_optimal(state, config, key: str | None, cross_node: bool, time_limit: float,  # type: ignore[no-untyped-def]
                     workers: int, seed: int, as_json: bool, policy, console):
    from .progress import solver_status

    if key is not None:
        from ..optimal.eviction.minimal import minimal_victims
        from ..plans.plan import minimal_eviction_objects
        from .render import render_minimal_preemption

        with solver_status(common.err) as update:
            answer = minimal_victims(state, config, key, cross_node=cross_node, time_limit=time_limit,
                                     workers=workers, seed=seed, progress=update)
        if not as_json:
            render_minimal_preemption(console, [answer])
        doc = {"mode": "optimal", "headOfQueue": True, "answer": answer.to_dict()}
        return doc, minimal_eviction_objects([answer]), bool(answer.violations)
    from dataclasses import asdict

    from ..optimal.eviction.pdb_model import budget_use
    from ..optimal.solve import OptimalOptions, solve_optimal
    from ..plans.landing import predict_landing
    from ..plans.plan import batch_eviction_objects, batch_preemptions, plan_document
    from .render import render_batch_preemptions, render_budgets, render_landing
    from .summaries import optimal_summary

    with solver_status(common.err) as update:
        result = solve_optimal(state, config, OptimalOptions(time_limit=time_limit, workers=workers, seed=seed,
                                                             eviction=policy), progress=update)
    plan = batch_preemptions(result)
    landing = predict_landing(state, config, result.node_of)
    budgets = budget_use(result.batch, result.node_of)
    if not as_json:
        render_batch_preemptions(console, plan, result)
        render_budgets(console, budgets)
        render_landing(console, landing)
    doc = {"mode": "optimal", "preemptions": [asdict(b) for b in plan], "summary": optimal_summary(result),
           "budgets": [u.to_dict() for u in budgets], "landing": plan_document(landing, budgets)}
    return doc, [plan_document(landing, budgets), *batch_eviction_objects(plan)], bool(result.violations)
