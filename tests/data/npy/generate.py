"""Regenerates the .npy/.npz fixtures of tests/cli/npy_test.cpp and model_cli_test.cpp.

Run from this directory with NumPy and ml_dtypes installed (the tests themselves need no
Python):  python3 generate.py
"""
import zipfile

import ml_dtypes
import numpy as np


def values(dtype, shape):
    count = int(np.prod(shape))
    return (np.arange(count) % 7 - 3).astype(dtype).reshape(shape)


# One small array per element type Estuary reads, little-endian as NumPy writes by default.
np.save("f4.npy", (np.arange(6, dtype=np.float32) * 0.5 - 1).reshape(2, 3))
np.save("f8_big_endian.npy", np.array([1.5, -2.25, 1e300], dtype=">f8"))
np.save("f2.npy", np.array([[0.5, -1.0], [65504.0, 2.0 ** -14]], dtype=np.float16))
np.save("i1.npy", values(np.int8, (5,)))
np.save("i2.npy", values(np.int16, (2, 2)))
np.save("i4.npy", values(np.int32, (3, 1)))
np.save("i8.npy", np.array([-(2 ** 62), 7, 2 ** 40], dtype=np.int64))
np.save("u1.npy", np.array([0, 1, 255], dtype=np.uint8))
np.save("b1.npy", np.array([[True, False, True]]))
np.save("scalar_f4.npy", np.float32(3.5))
np.save("empty_f4.npy", np.zeros((0, 4), dtype=np.float32))
np.save("bf16.npy", np.array([1.5, -2.0, 0.0078125], dtype=ml_dtypes.bfloat16))

# Header format versions 2.0 and 3.0 (NumPy picks them for huge or non-ASCII headers).
with open("f4_v2.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([1.0, 2.0], dtype=np.float32), version=(2, 0))
with open("f4_v3.npy", "wb") as f:
    np.lib.format.write_array(f, np.array([1.0, 2.0], dtype=np.float32), version=(3, 0))

# Refused: Fortran order, element types Estuary lacks, structured arrays.
np.save("fortran_f4.npy", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
np.save("u2.npy", np.array([1, 2], dtype=np.uint16))
np.save("structured.npy", np.zeros(2, dtype=[("a", "<f4"), ("b", "<i4")]))

# Archives: stored (np.savez), deflated (np.savez_compressed), and zip64 records, which
# zipfile writes once an archive passes ZIP64_LIMIT (lowered here so a small file has them).
x = (np.arange(8, dtype=np.float32) - 2).reshape(2, 4)
y = (np.arange(8, dtype=np.float32) * 0.25).reshape(2, 4)
np.savez("xy.npz", x=x, y=y)
np.savez_compressed("xy_compressed.npz", x=x, y=y)
zipfile.ZIP64_LIMIT = 16
np.savez("xy_zip64.npz", x=x, y=y)
