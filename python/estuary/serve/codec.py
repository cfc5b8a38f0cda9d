"""Request and response bodies: JSON (`{"inputs": {NAME: nested lists}}` in,
`{"outputs": {NAME: nested lists}}` out) and .npz archives (Content-Type:
application/octet-stream), with the limits that keep one request from taking a replica's
memory. Anything wrong with a body raises BadRequest, which the server answers with HTTP 400.
"""
import io
import json
import re
import zipfile

import numpy as np

from .batching import NUMPY_DTYPES

JSON = "application/json"
NPZ = "application/octet-stream"


class BadRequest(ValueError):
    """A request the server cannot read; its message goes back to the client."""


def parse_size(text):
    """Bytes from "67108864", "64MiB", "64MB", "512KiB"; ValueError naming the text otherwise."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)(i?)B?\s*", str(text), re.IGNORECASE)
    if not match:
        raise ValueError(f"'{text}' is not a size (examples: 67108864, 64MiB, 100MB)")
    number, prefix, binary = match.groups()
    base = 1024 if binary or not prefix else 1000
    return int(number) * base ** " KMGT".index(prefix.upper() or " ")


def media_type(content_type):
    """JSON or NPZ for a Content-Type header (JSON when there is none)."""
    kind = (content_type or JSON).split(";")[0].strip().lower()
    if kind not in (JSON, NPZ):
        raise BadRequest(f"Content-Type must be {JSON} or {NPZ} (an .npz archive), got '{kind}'")
    return kind


def decode(body, kind, inputs, limit):
    """The arrays of a request body by input name. JSON numbers take the model input's dtype
    when they fit it; values that do not (a fraction for an integer input) are handed on as
    they are, so that estuary's own dtype check names the input."""
    return decode_npz(body, limit) if kind == NPZ else decode_json(body, {io["name"]: io for io in inputs})


def decode_json(body, inputs):
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as error:
        raise BadRequest(f"the body is not valid JSON: {error}") from None
    if not isinstance(document, dict) or not isinstance(document.get("inputs"), dict):
        raise BadRequest('the JSON body must be an object {"inputs": {NAME: nested lists, ...}}')
    return {name: json_array(name, value, inputs.get(name)) for name, value in document["inputs"].items()}


def json_array(name, value, io):
    try:
        array = np.asarray(value)
    except ValueError as error:
        raise BadRequest(f"input '{name}': the nested lists are not rectangular ({error})") from None
    if array.dtype == object or array.dtype.kind in "USV":
        raise BadRequest(f"input '{name}': expected numbers, got {type(value).__name__} values that are not")
    want = NUMPY_DTYPES.get(io["dtype"]) if io else None
    if want is None or array.dtype == want:
        return array
    fits = (want.kind == "f" and array.dtype.kind in "iuf") or (want.kind in "iu" and array.dtype.kind in "iu") or \
        (want.kind == "b" and array.dtype.kind == "b")
    if not fits:
        return array  # estuary refuses it: "input 'ids': expected dtype i64, got float64"
    cast = array.astype(want)
    if want.kind in "iu" and not np.array_equal(cast, array):
        raise BadRequest(f"input '{name}': expected dtype {io['dtype']}, got integers outside its range")
    return cast


def decode_npz(body, limit):
    """An .npz archive's arrays. Its entries' sizes are read from the archive's directory and
    refused past `limit` before anything is inflated (a small archive can expand a
    thousandfold); pickled objects are refused."""
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            expanded = sum(entry.file_size for entry in archive.infolist())
            if expanded > limit:
                raise BadRequest(f"the .npz archive expands to {expanded} bytes, more than the limit of {limit}")
            with np.load(io.BytesIO(body), allow_pickle=False) as arrays:
                return {name: arrays[name] for name in arrays.files}
    except BadRequest:
        raise
    except (zipfile.BadZipFile, ValueError, OSError, EOFError) as error:
        raise BadRequest(f"the body is not a readable .npz archive: {error}") from None


def encode(outputs, kind):
    """The response body for outputs {name: array}, in the form the request came in."""
    if kind == NPZ:
        buffer = io.BytesIO()
        np.savez(buffer, **outputs)
        return buffer.getvalue()
    return json.dumps({"outputs": {name: array.tolist() for name, array in outputs.items()}}).encode()
