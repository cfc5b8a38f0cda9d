"""Estuary's results waiting on disk for a reference's, one .npy file each, so that a comparison
never holds every intermediate tensor in memory."""
import os

import numpy as np

from .metrics import measure, past_threshold
from .report import Row


class Spool:
    """Rows for every result an observed run (Model.run_observed) shows, in run order, and the
    results themselves in `folder` until measure() compares each with its reference."""

    def __init__(self, folder):
        self.folder = folder
        self.rows = []
        self.waiting = {}  # value name -> (row, file, bytes)

    def keep(self, info, array, matched=True):
        """An observer for run_observed: a row for the result, and its file when it has a name the
        reference may share (`matched`)."""
        # node and op are Estuary's until the reference names the node that computes the value.
        row = Row(index=len(self.rows), value=info["value"], estuary_node=info["node"], estuary_op=info["op"],
                  inputs=[name for name in info["inputs"] if name], shape=list(array.shape), dtype=str(array.dtype),
                  node=info["node"], op=info["op"])
        self.rows.append(row)
        if not info["value"] or not matched:  # a value the pipeline made unnamed: nothing to match it with
            return
        if array.dtype.kind not in "biufc":  # bf16 (ml_dtypes), which .npy files cannot name
            array = array.astype(np.float32)
        file = os.path.join(self.folder, f"{row.index}.npy")
        np.save(file, array)
        self.waiting[info["value"]] = (row, file, array.nbytes)

    @property
    def sizes(self):
        """Bytes of each waiting result, by name."""
        return {name: entry[2] for name, entry in self.waiting.items()}

    def measure(self, name, expected, min_cosine, max_rel, other_orders=False):
        """Measures the waiting result `name` against `expected` into its row, and drops its file."""
        row, file, _ = self.waiting.pop(name)
        row.figures = measure(np.load(file), expected, other_orders=other_orders)
        row.reason = past_threshold(row.figures, min_cosine, max_rel)
        os.remove(file)
        return row
