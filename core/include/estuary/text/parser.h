#pragma once
// Parses Estuary's text form (docs/text-format.md) into a graph.
//
// Errors raise an Error "source:line:column: expected X, found Y". Values may be used
// before the statement that defines them (so cyclic graphs can be written for verifier
// tests); such forward references resolve at the end of the enclosing graph, and nodes
// keep the order in which they are written.
#include <memory>
#include <string>
#include <string_view>

#include "estuary/ir/graph.h"

namespace estuary {

std::unique_ptr<Graph> parseGraph(std::string_view text, std::string_view source_name = "<text>");

// Reads and parses a file; errors name the file.
std::unique_ptr<Graph> parseGraphFile(const std::string& path);

}  // namespace estuary
