"""Time the offline render: `make bench` (or python -m offline.bench [stacks...] --runs N).

Each run is the full path a user takes: read the stack file, validate, run the program under the
recording mocks, write build/<stack>/. Reports min and median wall time; not asserted in tests.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from contextlib import redirect_stdout
from io import StringIO

from offline import render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("stacks", nargs="*", default=["dev", "prod"])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    for stack in args.stacks:
        times = []
        for _ in range(args.runs):
            with tempfile.TemporaryDirectory() as out, redirect_stdout(StringIO()):
                started = time.perf_counter()
                if render.main([stack, "--out", out]) != 0:
                    raise SystemExit(f"render of {stack} failed")
                times.append(time.perf_counter() - started)
        print(f"{stack}: min {min(times):.2f} s, median {statistics.median(times):.2f} s over {args.runs} runs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
