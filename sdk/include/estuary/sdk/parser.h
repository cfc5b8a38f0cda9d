#pragma once
// The parser API: a model file into a core-IR graph the caller may edit before building it
// (GE's aclgrphParseONNX, aclgrphParseTensorFlow, ...). Every function goes through the
// frontend registry (estuary/frontend/frontend.h), the same path `estuary convert` and the
// Python package take; the named ones only fix the frontend.
//
//   std::unique_ptr<Graph> graph = sdk::parseOnnx("model.onnx");
//   ... edit the graph (estuary/ir/graph.h) ...
//   auto model = sdk::buildGraph(*graph);
//
// Options that shape the translation come from the BuildConfig: framework, signature,
// weights, allowed folders, output names, input shapes (fixed before translation, so that
// translators see them) and frontend keys. Errors name the file and what is wrong in it; an
// op no translator knows raises UnsupportedOpsError listing every such op.
#include <memory>
#include <string>

#include "estuary/frontend/model_input.h"
#include "estuary/ir/graph.h"
#include "estuary/sdk/options.h"

namespace estuary::sdk {

// The frontend is config.framework when set, else the one that recognizes the model.
std::unique_ptr<Graph> parseModel(const ModelInput& input, const BuildConfig& config = {});
std::unique_ptr<Graph> parseModel(const std::string& path, const BuildConfig& config = {});

std::unique_ptr<Graph> parseOnnx(const std::string& path, const BuildConfig& config = {});
// A frozen GraphDef (.pb) or a SavedModel directory.
std::unique_ptr<Graph> parseTensorFlow(const std::string& path, const BuildConfig& config = {});
// A PIR program (inference.json) or a legacy ProgramDesc (.pdmodel), with its .pdiparams
// beside it or at config.frontend.weights.
std::unique_ptr<Graph> parsePaddle(const std::string& path, const BuildConfig& config = {});
// A MindIR file (and the variables folder of its split form).
std::unique_ptr<Graph> parseMindSpore(const std::string& path, const BuildConfig& config = {});

// The frontend options a parse uses: config.frontend with config's input shapes and ranges.
FrontendOptions frontendOptionsOf(const BuildConfig& config);

}  // namespace estuary::sdk
