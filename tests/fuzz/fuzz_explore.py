"""Fuzz without stopping at the first failure: tally the outcomes of many graphs.

    .venv/bin/python tests/fuzz/fuzz_explore.py --examples 2000 --seed 1 --save /tmp/fuzz-failures
    .venv/bin/python tests/fuzz/fuzz_explore.py --examples 200 --zero-size

Prints one line per graph that does not pass (its kind, ops and reason), then the tally per
kind. With ``--save DIR`` each failing graph is written as ``DIR/<n>.onnx`` with its feed as
``DIR/<n>.npz``: the material of a regression test (``test_regressions.py``).
"""

from __future__ import annotations

import argparse
import faulthandler
import os
import sys
import time
from collections import Counter

import numpy as np
from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, os.path.dirname(__file__))

from fuzz_harness import run_case  # noqa: E402
from fuzz_onnx_graphs import onnx_cases  # noqa: E402


def save(folder: str, name: str, case) -> None:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{name}.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    np.savez(os.path.join(folder, f"{name}.npz"), **case.feed)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-nodes", type=int, default=6)
    parser.add_argument("--zero-size", action="store_true")
    parser.add_argument("--families", help="comma-separated generator names (default: all)")
    parser.add_argument("--save", help="folder for the failing models and feeds")
    args = parser.parse_args(argv)
    faulthandler.enable()
    tally: Counter[str] = Counter()
    reasons: Counter[str] = Counter()
    start = time.time()
    families = args.families.split(",") if args.families else None

    @seed(args.seed)
    @settings(max_examples=args.examples, deadline=None, database=None,
              suppress_health_check=list(HealthCheck), phases=["generate"])
    @given(onnx_cases(max_nodes=args.max_nodes, zero_size=args.zero_size, families=families))
    def fuzz(case) -> None:
        if args.save:  # a graph that kills the process (a segfault) stays as current.*
            save(args.save, "current", case)
        outcome = run_case(case.model, case.feed)
        tally[outcome.kind] += 1
        if outcome.kind != "pass":
            reasons[f"{outcome.kind}: {outcome.detail[:160]}"] += 1
            n = sum(tally.values())
            print(f"[{n}] {outcome.kind} {case.ops}: {outcome.detail[:300]}", flush=True)
            if args.save:
                save(args.save, str(n), case)

    fuzz()
    print(f"\n{sum(tally.values())} graphs in {time.time() - start:.0f} s: {dict(tally)}")
    for reason, count in reasons.most_common():
        print(f"{count:5d}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
