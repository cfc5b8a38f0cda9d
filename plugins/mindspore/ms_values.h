#pragma once
// MindIR values as Estuary sees them: element types (the TensorProto DataType of tensors and
// MindSpore's own TypeId numbers, which Cast takes as an argument), constants and attributes
// (an AttributeProto switched on its type: scalars, tuples, tensors), and the abstracts every
// node carries (its result's type and shape, or a tuple of them).
#include <optional>
#include <string>
#include <vector>

#include "estuary/frontend/decoder.h"
#include "estuary/ir/tensor.h"
#include "ms_messages.h"

namespace estuary::mindspore_frontend {

// The Estuary element type of a TensorProto data_type, or nullopt for one Estuary lacks.
std::optional<DType> dtypeFromMs(int32_t data_type);
std::string msTypeName(int32_t data_type);
// The element type of a MindSpore TypeId (Cast's dst_type: 43 float32, 35 int64, ...).
std::optional<DType> dtypeFromTypeId(int64_t type_id);

// A constant's or primitive attribute's value for the node view; `where` names it in errors.
AttrValue attrValueOf(const MsAttribute& attribute, const std::string& where);

// What a node's "shape" attribute says its result is.
enum class AbstractKind { Tensor, Scalar, Tuple, Monad, Other };
AbstractKind abstractKind(const MsAttribute* abstract);
// The number of elements of a tuple abstract (0 for anything else).
size_t tupleArity(const MsAttribute* abstract);
// Whether a tuple abstract holds only scalars (a shape built in the graph: Shape's result).
bool isScalarTuple(const MsAttribute* abstract);
// The node's abstract: its "shape" attribute, or nullptr.
const MsAttribute* abstractOf(const MsNode& node);

// The declared type of a graph input: a tensor (dims of -1 become fresh symbols named from
// `hint`; rank -2 means unranked), or a scalar as a 0-d tensor.
TensorType valueInfoType(const MsValueInfo& info, SymbolTable& symbols, const std::string& hint,
                         const std::string& where);
// Whether a graph input is a side-effect token (a monad), which the view drops.
bool isMonad(const MsValueInfo& info);

}  // namespace estuary::mindspore_frontend
