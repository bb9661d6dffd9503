"""Loading a generated 5,000-node / 50,000-pod cluster (target: under 10 s).

Baseline in the same run: ``json.load`` of the same file, i.e. the cost of just reading the bytes.
"""
from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from optisched.datasets.generate import GenerateSpec, dump, generate
from optisched.model.loader import load_cluster
from optisched.model.state import compile_cluster


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=50000)
    ap.add_argument("--format", choices=["json", "yaml"], default="json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"cluster.{args.format}"
        t = time.perf_counter()
        with open(path, "w") as f:
            dump(generate(GenerateSpec(nodes=args.nodes, pods=args.pods, seed=1)), f, args.format)
        print(f"generate: {time.perf_counter() - t:.2f} s, {path.stat().st_size / 1e6:.1f} MB")
        t = time.perf_counter()
        with open(path) as f:
            json.load(f) if args.format == "json" else f.read()
        base = time.perf_counter() - t
        t = time.perf_counter()
        cluster = load_cluster([str(path)])
        loaded = time.perf_counter() - t
        t = time.perf_counter()
        state = compile_cluster(cluster)
        compiled = time.perf_counter() - t
    total = loaded + compiled
    print(f"baseline (parse only): {base:.2f} s")
    print(f"load + validate: {loaded:.2f} s, compile: {compiled:.2f} s, total {total:.2f} s "
          f"({total / base:.1f}x baseline) for {state.num_nodes} nodes, {len(state.pods)} pods")
    print("target < 10 s:", "met" if total < 10 else "MISSED")


if __name__ == "__main__":
    main()
