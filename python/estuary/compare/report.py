"""A comparison's result: one row per result Estuary computed, in run order, and its forms: a
terminal table, JSON, CSV and a plot of the error along the graph."""
import csv
import json
import math
from dataclasses import asdict, dataclass, field


@dataclass
class Row:
    index: int          # place in Estuary's run order
    value: str          # the value's name, shared with the reference
    estuary_node: str   # the node of the built model that computed it (a fused node keeps its first node's name)
    estuary_op: str
    inputs: list        # the value names that node read
    shape: list
    dtype: str
    node: str = ""      # the reference's node that computes the value: the framework's name
    op: str = ""
    figures: dict = None  # cosine, max_abs, max_rel, mismatched, axes; None when the reference lacks the value
    reason: str = None    # why it is past the thresholds, or None
    unavailable: str = None  # why the reference has the value but could not hand it over, or None

    @property
    def compared(self):
        return self.figures is not None


@dataclass
class Report:
    model: str
    reference: str
    precision_mode: str
    device: str
    pipeline: str
    min_cosine: float
    max_rel: float
    rows: list
    outputs: list = field(default_factory=list)

    @property
    def compared(self):
        return [row for row in self.rows if row.compared]

    @property
    def unavailable(self):
        """The rows the reference has a value for but could not hand over, with why."""
        return [row for row in self.rows if row.unavailable]

    @property
    def first_past_threshold(self):
        """The first row, in run order, whose figures are past the thresholds; None when clean."""
        return next((row for row in self.rows if row.reason), None)

    @property
    def clean(self):
        return self.first_past_threshold is None

    def row_of(self, value):
        return next((row for row in self.rows if row.value == value), None)

    def inputs_of(self, row):
        """The rows of the values `row`'s node read (those Estuary computed; graph inputs and weights
        are the same on both sides)."""
        found = (self.row_of(name) for name in row.inputs)
        return [entry for entry in found if entry is not None]

    def summary(self):
        compared = self.compared
        worst = min((row.figures["cosine"] for row in compared if row.figures["cosine"] is not None), default=None)
        first = self.first_past_threshold
        text = f"{len(compared)} of {len(self.rows)} results compared with {self.reference}"
        unavailable = self.unavailable
        others = len(self.rows) - len(compared) - len(unavailable)
        no_counterpart = "no counterpart there: layout reorders, casts a precision mode inserted"
        if unavailable:
            text += (f" ({len(unavailable)} that {self.reference} has but could not hand over: the first, "
                     f"'{unavailable[0].value}', for {unavailable[0].unavailable}")
            text += f"; the others have {no_counterpart})" if others else ")"
        elif others:
            text += f" (the others have {no_counterpart})"
        reordered = sum(1 for row in compared if row.figures.get("axes"))
        if reordered:
            text += (f"; {reordered} measured in the reference's axis order (computed in another, under the same "
                     f"name: the shape column's axes)")
        text += f"; thresholds: cosine >= {self.min_cosine}, max rel <= {self.max_rel:g}"
        if worst is not None:
            text += f"; lowest cosine {worst:.6f}"
        if first is None:
            return text + ".\nClean: no node past the thresholds."
        drifted = sum(1 for row in self.rows if row.reason)
        text += (f".\n{drifted} past the thresholds; the first is node '{first.node}' ({first.op}), "
                 f"value '{first.value}': {first.reason}.")
        inputs = [row for row in self.inputs_of(first) if row.compared]
        if any(row.reason for row in inputs):
            text += " Some of its inputs are already off: look before it."
        elif inputs:
            text += " Its inputs are within the thresholds: the node itself drifts."
        return text

    def table(self, rows=40):
        """The rows as a text table; past `rows` rows, those around the first drifted node."""
        shown = self.compared
        first = self.first_past_threshold
        omitted = 0
        if rows and len(shown) > rows:
            at = shown.index(first) if first else len(shown)
            start = max(0, min(at - rows // 2, len(shown) - rows))
            omitted = len(shown) - rows
            shown = shown[start:start + rows]
        header = ("#", "node", "op", "shape", "cosine", "max abs", "max rel", "")
        lines = [header]
        for row in shown:
            figures = row.figures
            mark = "<- first past thresholds" if row is first else ("past" if row.reason else "")
            lines.append((str(row.index), _shorten(row.node, 36), _shorten(_op(row), 28),
                          _shape(row), _format(figures["cosine"], ".6f"),
                          _format(figures["max_abs"], ".3g"), _format(figures["max_rel"], ".3g"), mark))
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        text = "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip()
                         for line in lines)
        if omitted:
            text += f"\n({omitted} more rows in the JSON and CSV reports)"
        if first is not None:
            text += f"\n\nfirst past the thresholds: node '{first.node}' ({first.op}), value '{first.value}': {first.reason}"
            for row in self.inputs_of(first):
                figures = row.figures or {}
                state = row.reason or ("within the thresholds" if row.compared else
                                       f"not compared: {row.unavailable}" if row.unavailable else "not compared")
                text += (f"\n  input '{row.value}' from node '{row.node}': cosine {_format(figures.get('cosine'), '.6f')}, "
                         f"max rel {_format(figures.get('max_rel'), '.3g')} ({state})")
        return text + "\n\n" + self.summary()

    def as_dict(self):
        first = self.first_past_threshold
        return {
            "model": self.model, "reference": self.reference, "precision_mode": self.precision_mode,
            "device": self.device, "pipeline": self.pipeline,
            "thresholds": {"min_cosine": self.min_cosine, "max_rel": self.max_rel},
            "clean": first is None,
            "first_past_threshold": None if first is None else {
                **_json_row(first), "inputs": [_json_row(row) for row in self.inputs_of(first)]},
            "outputs": [_json_row(row) for row in map(self.row_of, self.outputs) if row is not None],
            "nodes": [_json_row(row) for row in self.rows],
            "summary": self.summary(),
        }

    def to_json(self, path):
        with open(path, "w") as file:
            json.dump(self.as_dict(), file, indent=1, allow_nan=False, default=str)

    def to_csv(self, path):
        columns = ["index", "node", "op", "value", "estuary_node", "estuary_op", "shape", "dtype", "cosine", "max_abs",
                   "max_rel", "axes", "past_threshold", "unavailable"]
        with open(path, "w", newline="") as file:
            writer = csv.writer(file)
            writer.writerow(columns)
            for row in self.rows:
                figures = row.figures or {}
                writer.writerow([row.index, row.node, row.op, row.value, row.estuary_node, row.estuary_op,
                                 "x".join(map(str, row.shape)), row.dtype, figures.get("cosine", ""),
                                 figures.get("max_abs", ""), figures.get("max_rel", ""),
                                 ",".join(map(str, figures.get("axes") or [])), row.reason or "", row.unavailable or ""])

    def plot(self, path):
        """Relative error and 1 - cosine per compared node along the run order, as an image file."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        rows = self.compared
        floor = 1e-12  # where exact agreement is drawn on the log scale
        x = [row.index for row in rows]
        rel = [max(_finite(row.figures["max_rel"], 1.0), floor) for row in rows]
        cosine = [max(1.0 - _finite(row.figures["cosine"], 0.0), floor) for row in rows]
        figure, axis = plt.subplots(figsize=(max(8.0, min(24.0, len(rows) / 12.0)), 4.5))
        axis.semilogy(x, rel, ".-", linewidth=0.8, markersize=3, label="max rel error")
        axis.semilogy(x, cosine, ".-", linewidth=0.8, markersize=3, label="1 - cosine")
        axis.axhline(self.max_rel, color="C0", linestyle=":", linewidth=0.8)
        axis.axhline(1.0 - self.min_cosine, color="C1", linestyle=":", linewidth=0.8)
        first = self.first_past_threshold
        if first is not None:
            axis.axvline(first.index, color="red", linewidth=0.8)
            axis.annotate(f"{first.node} ({first.op})", (first.index, axis.get_ylim()[1]), rotation=90,
                          va="top", ha="right", fontsize=8, color="red")
        axis.set_xlabel("node, in Estuary's run order")
        axis.set_ylabel("error against " + self.reference)
        axis.set_title(f"{self.model}: {self.precision_mode}, {len(rows)} results compared")
        axis.legend(loc="upper left")
        figure.tight_layout()
        figure.savefig(path, dpi=110)
        plt.close(figure)


def _op(row):
    return row.op if row.op == row.estuary_op or not row.estuary_op else f"{row.op} ({row.estuary_op})"


def _shape(row):
    text = "x".join(map(str, row.shape)) or "scalar"
    axes = (row.figures or {}).get("axes")
    return f"{text} axes {','.join(map(str, axes))}" if axes else text


def _json_row(row):
    data = asdict(row)
    figures = data.pop("figures") or {}
    for key in ("cosine", "max_abs", "max_rel"):
        value = figures.get(key)
        data[key] = value if value is None or math.isfinite(value) else str(value)
    data["mismatched"] = figures.get("mismatched")
    data["axes"] = figures.get("axes")
    data["past_threshold"] = data.pop("reason")
    return data


def _format(value, spec):
    if value is None:
        return "-"
    return format(value, spec)


def _finite(value, fallback):
    return fallback if value is None or not math.isfinite(value) else value


def _shorten(text, width):
    return text if len(text) <= width else "..." + text[-(width - 3):]
