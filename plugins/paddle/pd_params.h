#pragma once
// A .pdiparams file: the persistable tensors of a program, concatenated with no header,
// names or alignment, in the order of their names sorted bytewise (Paddle's save_vars and
// save_vars_pir sort them). Each tensor: u32 version (0), u64 LoD level count and each
// level's u64 byte size and offsets, u32 tensor version (0), i32 TensorDesc size, the
// TensorDesc message (VarType.Type data_type, int64 dims), then the raw little-endian data.
// Every tensor is checked against what the program declares for it, and the file must end
// after the last one.
#include <map>
#include <string>
#include <vector>

#include "estuary/frontend/weights.h"
#include "estuary/ir/tensor.h"

namespace estuary::paddle_frontend {

// A persistable value as the program declares it.
struct ParameterSpec {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;  // -1 where the program leaves a dim unknown
};

// The tensors of `file` (the .pdiparams at `path`), one per spec, read in sorted-name order;
// tensors wrap the mapping where aligned. Raises naming the file and the parameter when the
// file is shorter or longer than the parameters need or a tensor's type disagrees.
std::map<std::string, Tensor> readParameters(const MappedFile& file, const std::string& path,
                                             std::vector<ParameterSpec> specs, WeightSource& weights);

}  // namespace estuary::paddle_frontend
