#include "estuary/ir/dtype.h"

namespace estuary {

size_t dtypeSize(DType type) {
  switch (type) {
    case DType::F64:
    case DType::I64:
      return 8;
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
    case DType::I16:
      return 2;
    case DType::I8:
    case DType::U8:
    case DType::Bool:
      return 1;
    case DType::Undefined:
      return 0;
  }
  return 0;
}

std::string_view dtypeName(DType type) {
  switch (type) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::F64: return "f64";
    case DType::I8: return "i8";
    case DType::I16: return "i16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::U8: return "u8";
    case DType::Bool: return "bool";
    case DType::Undefined: return "?";
  }
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  if (name == "?") return DType::Undefined;
  for (DType type : kAllDTypes) {
    if (dtypeName(type) == name) return type;
  }
  return std::nullopt;
}

bool isFloatingPoint(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 || type == DType::F64;
}

bool isInteger(DType type) {
  return type == DType::I8 || type == DType::I16 || type == DType::I32 || type == DType::I64 ||
         type == DType::U8;
}

bool isSignedInteger(DType type) { return isInteger(type) && type != DType::U8; }

}  // namespace estuary
