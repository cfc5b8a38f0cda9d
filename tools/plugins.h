#pragma once
// The --plugin option, shared by every command that reads graphs (optimize, build, run,
// bench): plugins bring ops (schemas, CPU kernels) and passes, so they are loaded before a
// graph that uses them is read, optimized, built or run.
#include "arguments.h"

namespace estuary::cli {

// The option's declaration; `when` says what the plugin is loaded before ("the pipeline").
OptionDecl pluginOption(const std::string& when);
// Loads every --plugin given, by name (searched like pipeline plugins) or path; a plugin
// that cannot be loaded raises an Error naming it and the reason.
void loadPlugins(const Arguments& args);

}  // namespace estuary::cli
