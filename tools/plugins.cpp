#include "plugins.h"

namespace estuary::cli {

OptionDecl pluginOption(const std::string& when) {
  return {"plugin", "NAME|FILE", "load a plugin before " + when + " (repeatable)", "", true};
}

}  // namespace estuary::cli
