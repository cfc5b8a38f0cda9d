#pragma once
// The options that choose and adjust a pass pipeline, shared by `estuary optimize` and
// `estuary convert`: --pipeline / --passes, --plugin, --disable, --switch-file, --debug,
// --dump-dir.
#include <memory>
#include <string>
#include <vector>

#include "arguments.h"
#include "estuary/pass/manager.h"

namespace estuary::cli {

std::vector<OptionDecl> pipelineOptionDecls(const std::string& default_pipeline);

// Loads the requested plugins and makes the pass manager the options describe.
std::unique_ptr<PassManager> passManagerFrom(const Arguments& args, const std::string& default_pipeline);

}  // namespace estuary::cli
