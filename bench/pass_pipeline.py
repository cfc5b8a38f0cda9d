#!/usr/bin/env python3
"""Runs pass_pipeline_bench at several graph sizes and prints a Markdown table of medians.

    python3 bench/pass_pipeline.py [--build build] [--repeats 5] [--sizes 10000,100000,1000000]

Each size runs in its own process, so the peak RSS column is that size's alone.
"""
import argparse
import pathlib
import statistics
import subprocess
import sys


def run_size(binary, nodes, repeats):
    out = subprocess.run([str(binary), str(nodes), str(repeats)], check=True,
                         capture_output=True, text=True).stdout
    rows = [dict(field.split("=", 1) for field in line.split()) for line in out.splitlines() if line]
    return {key: statistics.median(float(row[key]) for row in rows) for key in rows[0]}


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=str(root / "build"), help="build directory")
    parser.add_argument("--repeats", type=int, default=5, help="runs per size (median is reported)")
    parser.add_argument("--sizes", default="10000,100000,1000000", help="comma-separated node counts")
    args = parser.parse_args()
    binary = pathlib.Path(args.build) / "bin" / "pass_pipeline_bench"
    if not binary.exists():
        sys.exit(f"{binary} not found: build first (scripts/setup.sh)")

    print("| nodes | graph build (s) | cse (s) | dce (s) | fuse_add_rms_norm (s) | pipeline (s) | "
          "pipeline CPU (s) | s per 1M nodes | nodes after | peak RSS (MiB) |")
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        m = run_size(binary, size, args.repeats)
        per_million = m["pipeline_s"] / m["nodes"] * 1e6
        print(f"| {int(m['nodes']):,} | {m['build_s']:.3f} | {m['cse_s']:.3f} | {m['dce_s']:.3f} | "
              f"{m['fuse_add_rms_norm_s']:.3f} | {m['pipeline_s']:.3f} | {m['pipeline_cpu_s']:.3f} | "
              f"{per_million:.2f} | "
              f"{int(m['nodes_after']):,} | {m['peak_rss_mib']:.0f} |", flush=True)


if __name__ == "__main__":
    main()
