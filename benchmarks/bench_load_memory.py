"""Peak memory and time of loading dumps, each in a fresh process under an address-space limit.

    python benchmarks/gen_dump.py --nodes 5000 -o /tmp/dump-5000.yaml
    python benchmarks/bench_load_memory.py /tmp/dump-5000.yaml /tmp/dump-5000.json

Baseline in the same run: the peak of a process that only imports the loader. A load that needs more
than ``--memory-limit`` fails there instead of taking the machine's memory (reported as such).
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time

_LOAD = """
import os
import sys
from optisched.model.bounded import parse_size
from optisched.model.loader import load_cluster
if sys.argv[1] != "-":
    limit = parse_size(sys.argv[2]) if sys.argv[2] != "size" else os.path.getsize(sys.argv[1])
    c = load_cluster([sys.argv[1]], limit)
    print(len(c.nodes), len(c.pods))
"""


def measure(path: str, limit: str, memory: int) -> tuple[float, float, int, int, str]:
    """(seconds, CPU seconds, peak RSS bytes, exit status, last line of output) of loading ``path`` alone."""
    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    t = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", _LOAD, path, limit], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, preexec_fn=cap)  # noqa: PLW1509 (no threads)
    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    lines = out.strip().splitlines()
    cpu = usage.ru_utime + usage.ru_stime
    return time.perf_counter() - t, cpu, usage.ru_maxrss * 1024, proc.returncode, lines[-1] if lines else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("files", nargs="+")
    ap.add_argument("--max-input-size", default="size", help="passed to the loader (default: each file's size)")
    ap.add_argument("--memory-limit", type=float, default=8.0, help="GiB of address space per load")
    args = ap.parse_args()
    memory = int(args.memory_limit * 2**30)
    _, _, base, _, _ = measure("-", args.max_input_size, memory)
    print(f"baseline (import only): {base / 2**20:.0f} MiB")
    print("| file | size MB | load s (CPU s) | peak RSS MiB | peak / size | result |")
    print("|---|---:|---:|---:|---:|---|")
    for path in args.files:
        size = os.path.getsize(path)
        secs, cpu, peak, code, last = measure(path, args.max_input_size, memory)
        result = f"{last.split()[0]} nodes, {last.split()[1]} pods" if code == 0 else f"failed ({code}): {last[:80]}"
        print(f"| {os.path.basename(path)} | {size / 1e6:.0f} | {secs:.1f} ({cpu:.1f}) | {peak / 2**20:.0f} | "
              f"{peak / size:.1f} | {result} |", flush=True)


if __name__ == "__main__":
    main()
