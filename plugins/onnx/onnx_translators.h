#pragma once
// The ONNX frontend's translators (op_table.cpp): one small function per op of the default
// domain, in a table keyed by op type and opset range. Core ops follow the newest opset, so
// most ops are copied as they are; the translators of ops whose meaning changed adapt the
// older forms.
#include <cstdint>
#include <string_view>
#include <vector>

#include "estuary/frontend/node_context.h"
#include "estuary/frontend/translator_table.h"

namespace estuary::onnx_frontend {

// The newest opset of onnx 1.23 (onnx.defs.onnx_opset_version()).
inline constexpr int64_t kNewestOpset = 28;

// The translators of the default domain. Each op's entry takes the opsets from the oldest
// form it translates (at most 11, where every op's form is taken) to the newest: a model of
// an older opset using the op reports it as unsupported.
const TranslatorTable& onnxTranslators();

// The node's ONNX attributes in the kinds the core schema of `op_type` declares (an INT
// becomes an element type where the schema wants a Type, a GRAPH a subgraph), except those
// named in `skip`. An attribute the schema does not know, or of the wrong ONNX type, is an
// error naming it.
NodeContext::Attributes onnxAttributes(NodeContext& node, std::string_view op_type,
                                       const std::vector<std::string_view>& skip = {});

}  // namespace estuary::onnx_frontend
