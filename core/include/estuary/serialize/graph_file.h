#pragma once
// Reading and writing graphs in either of Estuary's two file forms: the text form (.est)
// and the binary serialization (any other name; large weights in a `.weights` side file).
#include <memory>
#include <string>

#include "estuary/ir/graph.h"

namespace estuary {

// Recognizes the binary form by its magic bytes; anything else is parsed as text.
std::unique_ptr<Graph> readGraphFile(const std::string& path);
// Text when the name ends in ".est", binary otherwise.
void writeGraphFile(const Graph& graph, const std::string& path);

}  // namespace estuary
