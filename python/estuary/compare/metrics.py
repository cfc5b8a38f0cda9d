"""How far one tensor is from its reference: the figures `estuary compare` reports per node."""
import itertools
import math

import numpy as np

# The most axes whose orders are tried when a result may be in another axis order.
MAX_PERMUTED_AXES = 6
# Below this cosine a result is tried in the other axis orders: one in the wrong order is
# about uncorrelated, one in the right order agrees far better even in 16 bits.
PERMUTED_BELOW_COSINE = 0.99


def measure(tested, reference, other_orders=False):
    """{cosine, max_abs, max_rel, mismatched, axes} of `tested` against `reference`, in f64.

    max_rel is max|tested - reference| / max|reference|: the largest error relative to the
    tensor's scale, which stays finite where single elements of the reference are zero.
    A shape difference, or a NaN/inf in one but not the other, makes the tensors mismatched.

    other_orders: the result may hold the reference's values in another axis order (the
    pipeline's sink_transposes moves a Transpose past elementwise ops and the value keeps its
    name: a TensorFlow Relu's NHWC result computed NCHW). When its shape differs from the
    reference's, or its cosine is below PERMUTED_BELOW_COSINE, every axis order that gives the
    reference's shape is measured too and the closest kept; `axes` then names it (the
    permutation of the result's axes; None for its own order).
    """
    same_order = None
    if tuple(tested.shape) == tuple(reference.shape):
        same_order = dict(_measure(tested, reference), axes=None)
        if not other_orders or (same_order["cosine"] is not None and same_order["cosine"] >= PERMUTED_BELOW_COSINE):
            return same_order
    candidates = [same_order] if same_order else []
    if other_orders:
        candidates += [dict(_measure(np.transpose(tested, order), reference), axes=list(order))
                       for order in _axis_orders(tested.shape, reference.shape)]
    if not candidates:
        return {"cosine": None, "max_abs": None, "max_rel": None, "axes": None,
                "mismatched": f"shape {list(tested.shape)} vs the reference's {list(reference.shape)}"}
    # max keeps the first of equals: the result's own order when another fits no better.
    return max(candidates, key=lambda figures: -math.inf if figures["cosine"] is None else figures["cosine"])


def _axis_orders(shape, reference_shape):
    """The axis orders but the identity that turn `shape` into `reference_shape`."""
    if len(shape) != len(reference_shape) or sorted(shape) != sorted(reference_shape) or \
            len(shape) > MAX_PERMUTED_AXES:
        return []
    return [order for order in itertools.permutations(range(len(shape)))
            if [shape[axis] for axis in order] == list(reference_shape) and list(order) != sorted(order)]


def _measure(tested, reference):
    a = np.asarray(tested, dtype=np.float64).ravel()
    b = np.asarray(reference, dtype=np.float64).ravel()
    if a.size == 0:
        return {"cosine": 1.0, "max_abs": 0.0, "max_rel": 0.0, "mismatched": None}
    finite_a, finite_b = np.isfinite(a), np.isfinite(b)
    # NaNs and infinities must sit at the same places with the same values; the rest is measured.
    special = ~(finite_a & finite_b)
    if special.any():
        same = (np.isnan(a) & np.isnan(b)) | (a == b)
        if not same[special].all():
            where = int(np.flatnonzero(special & ~same)[0])
            return {"cosine": None, "max_abs": math.inf, "max_rel": math.inf,
                    "mismatched": f"element {where} is {a[where]} against the reference's {b[where]}"}
        a, b = a[~special], b[~special]
        if a.size == 0:
            return {"cosine": 1.0, "max_abs": 0.0, "max_rel": 0.0, "mismatched": None}
    difference = np.abs(a - b)
    max_abs = float(difference.max())
    scale = float(np.abs(b).max())
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else math.inf)
    norms = float(np.linalg.norm(a)) * float(np.linalg.norm(b))
    if norms == 0:
        cosine = 1.0 if max_abs == 0 else 0.0
    else:
        cosine = float(np.dot(a, b) / norms)
    return {"cosine": cosine, "max_abs": max_abs, "max_rel": max_rel, "mismatched": None}


# Per precision mode: the least cosine similarity and the largest relative error a node may
# have before it counts as drifted. f32 against an f64 reference agrees to about 1e-6 after
# hundreds of nodes; 16-bit formats carry 8 (bf16) or 11 (fp16) bits of mantissa.
DEFAULT_THRESHOLDS = {
    "origin": (0.99999, 1e-3),
    "fp32": (0.99999, 1e-3),
    "fp64": (0.99999, 1e-3),
    "fp16": (0.9999, 1e-2),
    "mixed-fp16": (0.9999, 1e-2),
    "bf16": (0.999, 5e-2),
    "mixed-bf16": (0.999, 5e-2),
}


def thresholds_for(precision_mode):
    """(least cosine, largest relative error) for a precision mode in any spelling
    estuary.precision_modes() lists."""
    import estuary
    modes = estuary.precision_modes()
    if precision_mode not in modes:
        raise ValueError(f"unknown precision mode {precision_mode!r} (known: {', '.join(modes)})")
    return DEFAULT_THRESHOLDS[modes[precision_mode]]


def past_threshold(figures, min_cosine, max_rel):
    """Why these figures count as drifted, or None."""
    if figures["mismatched"]:
        return figures["mismatched"]
    if figures["cosine"] is not None and figures["cosine"] < min_cosine:
        return f"cosine {figures['cosine']:.6f} < {min_cosine}"
    if figures["max_rel"] is not None and figures["max_rel"] > max_rel:
        return f"max rel {figures['max_rel']:.3g} > {max_rel:g}"
    return None
