#pragma once
// Saves and loads graphs in Estuary's own protobuf format (core/proto/estuary/ir.proto).
//
// A saved graph keeps everything its text form shows: names, types, attributes, subgraphs,
// mutable inputs and their updates. Small tensors are stored inline; larger ones go into a
// side file `<path>.weights` at 64-byte aligned offsets, so weights may exceed protobuf's
// 2 GB limit. Loading maps the side file and wraps those tensors without copying them.
//
// Bad files (wrong magic, newer format version, truncation, a missing or short side file,
// tensor data out of range or of the wrong size, dangling value references) raise an Error
// naming the file and what is wrong.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "estuary/ir/graph.h"

namespace estuary {

// The format version written by this build; files of newer versions are refused.
inline constexpr uint32_t kGraphFormatVersion = 1;

struct SaveOptions {
  // Tensors with more bytes than this go into the side file; smaller ones stay inline.
  size_t inline_tensor_limit = 1024;
};

void saveGraph(const Graph& graph, const std::string& path, const SaveOptions& options = {});
std::unique_ptr<Graph> loadGraph(const std::string& path);

// The same format in memory, every tensor inline; for small graphs (below 2 GB).
std::string saveGraphToBytes(const Graph& graph);
std::unique_ptr<Graph> loadGraphFromBytes(std::string_view bytes,
                                          std::string_view source_name = "<bytes>");

}  // namespace estuary
