#pragma once
// The --plugin option, shared by every command that reads graphs (optimize, build, run,
// bench, convert): plugins bring ops (schemas, CPU kernels), passes and frontends, so the SDK
// loads them (BuildConfig::plugins) before a graph that uses them is read, optimized, built
// or run.
#include "arguments.h"

namespace estuary::cli {

// The option's declaration; `when` says what the plugin is loaded before ("the pipeline").
OptionDecl pluginOption(const std::string& when);

}  // namespace estuary::cli
