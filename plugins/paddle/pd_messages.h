#pragma once
// Paddle's protobuf messages, as structs of views into the file: the legacy program
// (ProgramDesc and what it holds) and the TensorDesc heading each tensor of a .pdiparams.
// Field numbers from paddle/phi/core/framework/framework.proto (Paddle 3.3; 2.6 is the same
// for everything read here). Nothing is registered in protobuf's pool: Paddle, imported
// beside Estuary, has its own.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/frontend/protobuf.h"
#include "estuary/ir/dtype.h"

namespace estuary::paddle_frontend {

// framework.proto's VarType.Type: element types, then the kinds of variables.
enum PdVarType : int32_t {
  kPdBool = 0, kPdInt16 = 1, kPdInt32 = 2, kPdInt64 = 3, kPdFp16 = 4, kPdFp32 = 5, kPdFp64 = 6,
  kPdDenseTensor = 7, kPdSelectedRows = 8, kPdFeedMinibatch = 9, kPdFetchList = 10, kPdStepScopes = 11,
  kPdDenseTensorArray = 13, kPdUint8 = 20, kPdInt8 = 21, kPdBf16 = 22,
};

// The Estuary element type of a VarType.Type, or nullopt for one Estuary lacks.
std::optional<DType> dtypeFromPd(int32_t type);
// "FP32", or "type 24", for errors.
std::string pdTypeName(int32_t type);

struct TensorDesc {
  int32_t data_type = -1;
  std::vector<int64_t> dims;
};

struct DenseTensorDesc {
  std::optional<TensorDesc> tensor;
};

struct VarTypeDesc {
  int32_t type = -1;
  std::optional<DenseTensorDesc> dense_tensor;
  std::optional<DenseTensorDesc> tensor_array;
};

struct VarDesc {
  std::string_view name;
  std::optional<VarTypeDesc> type;
  bool persistable = false;
  bool is_parameter = false;
};

// framework.proto's AttrType.
enum PdAttrType : int32_t {
  kAttrInt = 0, kAttrFloat = 1, kAttrString = 2, kAttrInts = 3, kAttrFloats = 4, kAttrStrings = 5,
  kAttrBoolean = 6, kAttrBooleans = 7, kAttrBlock = 8, kAttrLong = 9, kAttrBlocks = 10, kAttrLongs = 11,
  kAttrFloat64s = 12, kAttrVar = 13, kAttrVars = 14, kAttrFloat64 = 15, kAttrScalar = 16, kAttrScalars = 17,
};

struct PdScalar {
  int32_t type = 0;  // 1 bool, 2 int64, 3 float64, 4 complex128
  bool b = false;
  int64_t i = 0;
  double r = 0;
};

struct OpAttr {
  std::string_view name;
  int32_t type = -1;
  int32_t i = 0;
  float f = 0;
  std::string_view s;
  std::vector<int32_t> ints;
  std::vector<float> floats;
  std::vector<std::string_view> strings;
  bool b = false;
  std::vector<bool> bools;
  int32_t block_idx = -1;
  int64_t l = 0;
  std::vector<int32_t> blocks_idx;
  std::vector<int64_t> longs;
  std::vector<double> float64s;
  std::string_view var_name;
  std::vector<std::string_view> vars_name;
  double float64 = 0;
  std::optional<PdScalar> scalar;
  std::vector<PdScalar> scalars;
};

// One slot of an op: its parameter name ("X") and the variables it names.
struct OpSlot {
  std::string_view parameter;
  std::vector<std::string_view> arguments;
};

struct OpDesc {
  std::string_view type;
  std::vector<OpSlot> inputs;
  std::vector<OpSlot> outputs;
  std::vector<OpAttr> attrs;
};

struct BlockDesc {
  int32_t idx = 0;
  int32_t parent_idx = -1;
  std::vector<VarDesc> vars;
  std::vector<OpDesc> ops;
};

struct PdVersion {
  int64_t version = 0;
};

struct ProgramDesc {
  std::vector<BlockDesc> blocks;
  std::optional<PdVersion> version;
};

}  // namespace estuary::paddle_frontend
