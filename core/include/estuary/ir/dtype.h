#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace estuary {

// Element types of tensors. The spelling in the text form is the short name
// (f32, bf16, i64, bool, ...).
enum class DType : uint8_t {
  Undefined = 0,
  F32,
  F16,
  BF16,
  F64,
  I8,
  I16,
  I32,
  I64,
  U8,
  Bool,
};

inline constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64,
                                       DType::I8,  DType::I16, DType::I32,  DType::I64,
                                       DType::U8,  DType::Bool};

// Bytes per element; 0 for Undefined.
size_t dtypeSize(DType type);
// "f32", "i64", ...; "?" for Undefined.
std::string_view dtypeName(DType type);
std::optional<DType> parseDType(std::string_view name);

bool isFloatingPoint(DType type);
bool isInteger(DType type);  // signed or unsigned, not bool
bool isSignedInteger(DType type);

}  // namespace estuary
