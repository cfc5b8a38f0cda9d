"""Tallies of the ONNX node cases per op, printed at the end of the test run."""
import collections
import os

# op -> Counter of outcomes ("passed", "failed", "not claimed")
TALLY = collections.defaultdict(collections.Counter)


def record(ops, outcome):
    for op in ops:
        TALLY[op][outcome] += 1


def table():
    lines = ["| op | passed | failed | not claimed |", "|---|---|---|---|"]
    for op in sorted(TALLY):
        counts = TALLY[op]
        lines.append(f"| {op} | {counts['passed']} | {counts['failed']} | {counts['not claimed']} |")
    claimed = [op for op in TALLY if TALLY[op]["passed"] + TALLY[op]["failed"]]
    passing = [op for op in claimed if not TALLY[op]["failed"]]
    lines.append("")
    lines.append(f"{len(claimed)} ops claimed (at least one case translated), {len(passing)} of them pass every "
                 f"claimed case; {len(TALLY) - len(claimed)} ops not claimed.")
    return "\n".join(lines)


def write(path):
    with open(path, "w") as report:
        report.write("# ONNX node conformance\n\n" + table() + "\n")
