"""Effective requests as kube-scheduler v1.35 computes them (resource.PodRequests, calculateResource)."""
import pytest
from builders import node, pod, state_of

MI = 2**20

CASES = [
    ("one container", pod("p").req(cpu="500m", memory="1Gi"), {"cpu": 500, "memory": 1024 * MI}, (500, 1024 * MI)),
    ("containers are summed", pod("p").req(cpu="500m").container({"cpu": "250m", "memory": "100Mi"}),
     {"cpu": 750, "memory": 100 * MI}, (750, 300 * MI)),
    ("limits become requests when requests are missing", pod("p").lim(cpu="1", memory="2Gi"),
     {"cpu": 1000, "memory": 2048 * MI}, (1000, 2048 * MI)),
    ("an explicit request wins over the limit", pod("p").req(cpu="200m").lim(cpu="1"), {"cpu": 200}, (200, 200 * MI)),
    ("best-effort pod requests nothing but scores as 100m/200Mi", pod("p"), {}, (100, 200 * MI)),
    ("an init container larger than the sum sets the max", pod("p").req(cpu="500m").init({"cpu": "2"}),
     {"cpu": 2000}, (2000, 200 * MI)),
    ("a smaller init container changes nothing", pod("p").req(cpu="500m", memory="1Gi").init({"cpu": "100m"}),
     {"cpu": 500, "memory": 1024 * MI}, (500, 1024 * MI)),
    ("a sidecar adds to the sum", pod("p").req(cpu="500m", memory="64Mi").init({"cpu": "100m", "memory": "64Mi"},
                                                                                 sidecar=True),
     {"cpu": 600, "memory": 128 * MI}, (600, 128 * MI)),
    ("an init container after a sidecar runs beside it",
     pod("p").req(cpu="100m", memory="1Mi").init({"cpu": "200m", "memory": "1Mi"}, sidecar=True)
     .init({"cpu": "1", "memory": "1Mi"}),
     {"cpu": 1200, "memory": 2 * MI}, (1200, 2 * MI)),
    ("overhead is added", pod("p").req(cpu="500m", memory="1Gi").overhead(cpu="250m", memory="120Mi"),
     {"cpu": 750, "memory": 1144 * MI}, (750, 1144 * MI)),
    ("pod-level requests replace the container sum",
     pod("p").req(cpu="100m", memory="1Gi").container({"cpu": "100m"}).pod_level(cpu="1"),
     {"cpu": 1000, "memory": 1024 * MI}, (1000, 1024 * MI)),
    ("extended resources count", pod("p").req(cpu="1").lim(nvidia_gpu="2"), {"cpu": 1000, "nvidia.com/gpu": 2},
     (1000, 200 * MI)),
    ("fractional millicores round up once, after summing",
     pod("p").req(cpu="0.0004").container({"cpu": "0.0004"}), {"cpu": 1}, (1, 400 * MI)),
    ("an explicit zero is kept for scoring", pod("p").req(cpu="0", memory="0"), {}, (0, 0)),
]


@pytest.mark.parametrize("case,builder,want,nonzero", CASES, ids=[c[0] for c in CASES])
def test_effective_requests(case, builder, want, nonzero):
    state = state_of(node("n1"), builder)
    row = state.pod_index["default/p"]
    got = {r: int(state.pod_requests[row, j]) for j, r in enumerate(state.resources)
           if state.pod_requests[row, j] and r != "pods"}
    assert got == want
    assert tuple(int(x) for x in state.pod_nonzero[row]) == nonzero
