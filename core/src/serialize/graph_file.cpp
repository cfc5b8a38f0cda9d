#include "estuary/serialize/graph_file.h"

#include <cstring>
#include <fstream>

#include "estuary/serialize/serialize.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"
#include "estuary/text/printer.h"

namespace estuary {

namespace {

bool endsWith(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::unique_ptr<Graph> readGraphFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) raise(path, ": cannot open (", std::strerror(errno), ")");
  char head[7] = {};
  file.read(head, sizeof head);
  bool binary = file.gcount() == sizeof head && std::memcmp(head, "ESTUARY", sizeof head) == 0;
  file.close();
  return binary ? loadGraph(path) : parseGraphFile(path);
}

void writeGraphFile(const Graph& graph, const std::string& path) {
  if (endsWith(path, ".est")) {
    printGraphToFile(graph, path);
  } else {
    saveGraph(graph, path);
  }
}

}  // namespace estuary
