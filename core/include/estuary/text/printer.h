#pragma once
// Prints a graph in Estuary's text form (docs/text-format.md). parseGraph() reads the
// result back, and printing the parsed graph gives the same bytes again.
#include <cstddef>
#include <limits>
#include <string>

#include "estuary/ir/graph.h"

namespace estuary {

struct PrintOptions {
  // Tensor attributes with more bytes than this print as `tensor<f32[...]> elided`, which
  // keeps dumps of large models readable but cannot be parsed back.
  size_t elide_tensors_above_bytes = std::numeric_limits<size_t>::max();
  // Tensors with at most this many elements print as a decimal list, larger ones as
  // little-endian hex bytes.
  size_t max_decimal_elements = 16;
};

std::string printGraph(const Graph& graph, const PrintOptions& options = {});

// Writes printGraph() to `path`; raises an Error naming the file when it cannot be written.
void printGraphToFile(const Graph& graph, const std::string& path,
                      const PrintOptions& options = {});

}  // namespace estuary
