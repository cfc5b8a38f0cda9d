#pragma once
// NumPy's .npy and .npz files, as far as `estuary run` needs them: arrays of Estuary's element
// types in C order, read and written.
//
// .npy: format versions 1.0, 2.0 and 3.0. Element types by descr: f2 f4 f8 i1 i2 i4 i8 u1 b1,
// little-endian ('<f4'), big-endian ('>f4', byte-swapped on reading), or without byte order
// for one-byte types ('|u1'). NumPy has no bfloat16: arrays of ml_dtypes' bfloat16 are saved
// as two-byte void, descr '<V2' or '|V2', and that is how bf16 is read and written here.
// Fortran-ordered arrays of rank above 1, structured dtypes and other element types (uint16,
// complex, strings, objects) are refused with a message that names the file and the descr.
//
// .npz: a zip archive with one NAME.npy entry per array, stored (np.savez) or deflated
// (np.savez_compressed); zip64 records are read. Entry CRCs are checked.
#include <string>
#include <string_view>
#include <vector>

#include "estuary/ir/tensor.h"

namespace estuary::cli {

struct NamedArray {
  std::string name;  // the entry name without ".npy"
  Tensor array;
};

// Parses a .npy image; `source` names it in errors (a path, or "in.npz:x.npy").
Tensor parseNpy(std::string_view bytes, const std::string& source);
// The .npy image of `array`: version 1.0 (2.0 when the header outgrows 64 KiB), the header
// padded with spaces so that the data starts 64-byte aligned, as NumPy writes it.
std::string formatNpy(const Tensor& array);

Tensor readNpy(const std::string& path);
void writeNpy(const std::string& path, const Tensor& array);

// Entries in archive order.
std::vector<NamedArray> parseNpz(std::string_view bytes, const std::string& source);
// Without zip64: archives of 4 GiB and more are refused.
std::string formatNpz(const std::vector<NamedArray>& arrays, bool compress);

std::vector<NamedArray> readNpz(const std::string& path);
void writeNpz(const std::string& path, const std::vector<NamedArray>& arrays, bool compress);

// "f32 (2, 3)": an array's element type and shape as messages show them.
std::string describeArray(const Tensor& array);

}  // namespace estuary::cli
