"""Merging requests along a model's batch dim, and splitting the outputs back.

A model can be batched when every input and every output has the same plain symbolic dim
first (`batch`) and nowhere else, and no input is updated in place. Requests merge only
when all their other dims agree (an encoder's `seq`), and a merged run is padded up to one
of a few fixed sizes whose plans were built when the replica started, so that no request
waits for a plan to be built. This module knows nothing about Ray or HTTP.
"""
import itertools

import numpy as np

# Estuary's element types (Model.inputs' "dtype") as NumPy's. bf16 is left out: NumPy has
# no such type, and requests for a bf16 model are handed to estuary as given.
NUMPY_DTYPES = {
    "f32": np.dtype(np.float32), "f64": np.dtype(np.float64), "f16": np.dtype(np.float16),
    "i8": np.dtype(np.int8), "i16": np.dtype(np.int16), "i32": np.dtype(np.int32), "i64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8), "bool": np.dtype(np.bool_),
}


def bucket_sizes(max_batch):
    """The sizes merged runs are padded up to: every size up to 8, then four per doubling
    (10, 12, 14, 16, 20, 24, 28, 32, 40, ...), and `max_batch` itself. Padding then costs less
    than a fifth of a run's rows (33 -> 40), where powers of two cost up to nearly half
    (9 -> 16). A plan per size is cheap: a model's plans share its packed weights."""
    if max_batch < 1:
        raise ValueError(f"the largest batch must be at least 1, got {max_batch}")
    sizes, size = [], 1
    while size < max_batch:
        sizes.append(size)
        size += max(1, (1 << (size.bit_length() - 1)) // 4)
    return sizes + [max_batch]


def batch_symbol(inputs, outputs):
    """The symbolic dim requests can be merged along (e.g. "batch"), and None with the reason
    when there is none."""
    if not inputs:
        return None, "the model has no inputs"
    first = inputs[0]["shape"][0] if inputs[0]["shape"] else None
    if not isinstance(first, str):
        return None, f"input '{inputs[0]['name']}' does not start with a symbolic dim"
    for io in inputs + outputs:
        shape = io["shape"]
        if not shape or shape[0] != first:
            return None, f"'{io['name']}' does not start with the dim '{first}'"
        if first in shape[1:]:
            return None, f"'{io['name']}' has the dim '{first}' more than once"
        if io.get("mutable"):
            return None, f"input '{io['name']}' is updated in place by the model"
    return first, None


class Pending:
    """A request on its way into a merged run: its inputs by name, its size along the batch
    dim, and the key of the requests it may be merged with (the other dims of its inputs)."""

    __slots__ = ("feeds", "rows", "key")

    def __init__(self, feeds, rows, key):
        self.feeds, self.rows, self.key = feeds, rows, key


class Batcher:
    """How one model's requests are merged: built from Model.inputs and Model.outputs."""

    def __init__(self, inputs, outputs, max_batch):
        self.inputs = inputs
        self.output_names = [io["name"] for io in outputs]
        self.symbol, self.reason = batch_symbol(inputs, outputs)
        self.max_batch = max_batch if self.symbol else 1
        self.sizes = bucket_sizes(self.max_batch) if self.symbol else []
        self._names = {io["name"] for io in inputs}

    @property
    def enabled(self):
        return self.symbol is not None and self.max_batch > 1

    def pending(self, feeds):
        """The request as a Pending when it can be merged with others, else None: then it runs
        alone, and estuary's own checks say what is wrong with it, if anything. This checks
        only what merging needs (names, dtypes, ranks, static dims, one size per symbol)."""
        if not self.enabled or set(feeds) != self._names:
            return None
        sizes = {}
        for io in self.inputs:
            array = feeds[io["name"]]
            if not isinstance(array, np.ndarray) or NUMPY_DTYPES.get(io["dtype"]) != array.dtype:
                return None
            if array.ndim != len(io["shape"]):
                return None
            for dim, size in zip(io["shape"], array.shape):
                if isinstance(dim, int) and dim != size:
                    return None
                if isinstance(dim, str) and sizes.setdefault(dim, size) != size:
                    return None
        rows = sizes[self.symbol]
        if rows < 1 or rows > self.max_batch:
            return None
        key = tuple(feeds[io["name"]].shape[1:] for io in self.inputs)
        return Pending(feeds, rows, key)

    def size_for(self, rows):
        """The padded size of a merged run of `rows` rows."""
        return next(size for size in self.sizes if size >= rows)

    def merge(self, group):
        """The inputs of one run for requests of one key: concatenated along the batch dim,
        then padded by repeating the last row (a real row, so that padding cannot take a path
        real inputs never take, such as a fully masked attention row)."""
        rows = sum(pending.rows for pending in group)
        padding = self.size_for(rows) - rows
        merged = {}
        for io in self.inputs:
            name = io["name"]
            parts = [pending.feeds[name] for pending in group]
            if padding:
                parts.append(np.repeat(parts[-1][-1:], padding, axis=0))
            merged[name] = parts[0] if len(parts) == 1 else np.concatenate(parts)
        return merged

    def split(self, outputs, group):
        """A merged run's outputs (a list, in the model's order) back as one {name: array}
        per request of `group`."""
        results, start = [], 0
        for pending in group:
            stop = start + pending.rows
            results.append({name: output[start:stop] for name, output in zip(self.output_names, outputs)})
            start = stop
        return results

    def warmup_feeds(self, dim_sizes):
        """Inputs of zeros for every run size the replica builds a plan for at start: each
        padded size, combined with each size `dim_sizes` ({"seq": [16, 128]}) lists for the
        other symbolic dims. Returns the feeds, and why there are none when plans cannot be
        built ahead (their plans are then built on first use)."""
        unknown = [io["name"] for io in self.inputs if io["dtype"] not in NUMPY_DTYPES]
        if unknown:
            return [], f"NumPy has no dtype for input '{unknown[0]}'"
        computed = [io["name"] for io in self.inputs if None in io["shape"]]
        if computed:
            return [], f"input '{computed[0]}' has a dim computed from others"
        symbols = {dim for io in self.inputs for dim in io["shape"] if isinstance(dim, str) and dim != self.symbol}
        missing = sorted(symbols - set(dim_sizes))
        if missing:
            return [], f"no sizes were given for the dims {', '.join(missing)} (--warm-dims)"
        others = sorted(symbols)
        feeds = []
        for rows in self.sizes or [None]:
            for values in itertools.product(*(dim_sizes[symbol] for symbol in others)):
                sizes = dict(zip(others, values))
                if rows:
                    sizes[self.symbol] = rows
                feeds.append({io["name"]: np.zeros([sizes.get(dim, dim) for dim in io["shape"]],
                                                   NUMPY_DTYPES[io["dtype"]]) for io in self.inputs})
        return feeds, None
