#include "estuary/frontend/decoder.h"

#include <cctype>

namespace estuary {

std::string SymbolTable::unique(std::string name) {
  // Dims are identifiers in the IR: other characters become '_'.
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  }
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name.front()))) name = "d_" + name;
  std::string candidate = name;
  for (int suffix = 1; taken_.count(candidate); ++suffix) candidate = name + "_" + std::to_string(suffix);
  taken_[candidate] = true;
  return candidate;
}

Dim SymbolTable::named(std::string_view name) {
  auto found = by_name_.find(name);
  if (found == by_name_.end()) found = by_name_.emplace(std::string(name), unique(std::string(name))).first;
  return Dim::symbol(found->second);
}

Dim SymbolTable::fresh(const std::string& hint) { return Dim::symbol(unique(hint)); }

}  // namespace estuary
