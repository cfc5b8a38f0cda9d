#pragma once
// The options that choose and adjust a pass pipeline, shared by `estuary optimize` and
// `estuary convert`: --pipeline / --passes, --plugin, --disable, --switch-file, --debug,
// --dump-dir. They fill the SDK's build config, which resolves the pipeline as every other
// entry point does.
#include <string>
#include <vector>

#include "arguments.h"
#include "estuary/sdk/options.h"

namespace estuary::cli {

std::vector<OptionDecl> pipelineOptionDecls(const std::string& default_pipeline);

// Sets the config's pipeline, plugins, disabled passes, switch file and debug dumps.
void setPipelineOptions(sdk::BuildConfig& config, const Arguments& args, const std::string& default_pipeline);

}  // namespace estuary::cli
