#pragma once
// An .onnx file opened for the frontend: mapped, decoded, its opsets checked. It answers
// what a frontend is asked: the model's facts and the core IR graph, translated by the
// frontend layer's TranslationSession over the ONNX decoders (onnx_decoder.h).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "estuary/frontend/frontend.h"
#include "estuary/ir/graph.h"
#include "estuary/support/mapped_file.h"
#include "onnx_model.h"

namespace estuary::onnx_frontend {

class OnnxModel {
 public:
  // Maps and decodes `path`. Raises an Error naming the file when it is not a readable ONNX
  // model, or when its default-domain opset is newer than kNewestOpset.
  explicit OnnxModel(std::string path);

  const std::string& path() const { return path_; }
  const ModelProto& proto() const { return model_; }
  // The version of the default domain ("" / "ai.onnx") the model imports.
  int64_t opset() const { return opset_; }

  // Translates the model into core IR with inferred types. Raises UnsupportedOpsError
  // listing every op of the main graph, its subgraphs and the functions it calls that
  // cannot be translated, an Error naming the file and node on anything else.
  std::unique_ptr<Graph> toGraph(const FrontendOptions& options = {}) const;

  // The model's facts, without translating it.
  ModelInfo describe() const;

  struct Stats {
    size_t wrapped_tensors = 0;  // weights left in the file's mapping
    size_t copied_tensors = 0;   // weights copied (typed fields, misaligned raw data)
  };
  // Of the last toGraph().
  const Stats& stats() const { return stats_; }

 private:
  std::string path_;
  MappedFile file_;
  ModelProto model_;
  int64_t opset_ = 0;
  mutable Stats stats_;
};

// Whether the first bytes of a file look like an ONNX ModelProto (for recognizing files
// without the .onnx extension): a ModelProto begins with a known field of the right wire type.
bool looksLikeOnnx(std::string_view head);

}  // namespace estuary::onnx_frontend
