#pragma once
// TensorFlow's TensorProto and TensorShapeProto as Estuary tensors and types: tensor_content
// wrapped where it lies (the frontend layer's WeightSource), the typed *_val lists
// converted, a list shorter than the tensor (a splat) repeating its last value, half and
// bfloat16 values taken from the 16-bit patterns half_val holds.
#include <optional>
#include <string>
#include <vector>

#include "estuary/frontend/decoder.h"
#include "estuary/frontend/weights.h"
#include "estuary/ir/dtype.h"
#include "estuary/ir/shape.h"
#include "estuary/ir/tensor.h"
#include "tf_messages.h"

namespace estuary::tensorflow_frontend {

// The Estuary element type of a TensorFlow DataType (its _REF form included), or nullopt
// when Estuary has none (strings, complex, resources, variants, unsigned 16-64 bit).
std::optional<DType> dtypeFromTf(int32_t dtype);

// The static dims of a shape; raises naming `what` (in `where`) for an unknown rank or dim.
std::vector<int64_t> shapeDims(const std::optional<ShapeProto>& shape, const std::string& what,
                               const std::string& where);

// The dims of a shape as IR dims: a named dim becomes that symbol, an unknown one a fresh
// symbol derived from `hint`; an unknown rank is unranked.
Shape irShape(const ShapeProto& shape, SymbolTable& symbols, const std::string& hint);

// `proto` as a tensor: `owner` keeps the bytes tensor_content views alive. Raises naming
// `what` for an element type Estuary lacks or values that do not fit the shape.
Tensor tensorFromProto(const TensorProto& proto, WeightSource& weights, const std::shared_ptr<const void>& owner,
                       const std::string& what);

}  // namespace estuary::tensorflow_frontend
