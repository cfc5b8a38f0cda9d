#pragma once
// Pieces shared by the op families: type lists that recur in the ONNX constraints and the
// inference functions many ops share.
#include <vector>

#include "estuary/ops/inference_helpers.h"
#include "estuary/ops/schema.h"

namespace estuary {

// ONNX's "float and 32/64-bit integer" constraint (MatMul, Gemm, PRelu, CumSum, most
// reductions), restricted to the types Estuary has.
inline std::vector<DType> floatAndWideIntTypes() {
  return {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64};
}

inline std::vector<DType> indexTypes() { return {DType::I32, DType::I64}; }

// Output 0 has the shape of input 0.
inline void sameShapeAsFirstInput(InferenceContext& context) { propagateShape(context, 0, 0); }

}  // namespace estuary
