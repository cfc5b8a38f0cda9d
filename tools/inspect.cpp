// estuary inspect: what is in an IR file.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <map>
#include <set>

#include "arguments.h"
#include "commands.h"
#include "estuary/support/error.h"
#include "estuary/serialize/graph_file.h"

namespace estuary::cli {

namespace {

struct Summary {
  std::map<std::string, size_t> op_counts;
  size_t nodes = 0;
  std::set<std::string> symbols;
};

void collectSymbols(const Shape& shape, std::set<std::string>& symbols) {
  if (!shape.isRanked()) return;
  for (const Dim& dim : shape.dims()) {
    for (const std::string& symbol : dim.symbols()) symbols.insert(symbol);
  }
}

void summarize(const Graph& graph, Summary& summary) {
  for (Value* input : graph.inputs()) collectSymbols(input->shape(), summary.symbols);
  for (Node* node : graph.nodes()) {
    ++summary.nodes;
    ++summary.op_counts[node->qualifiedOpType()];
    for (Value* output : node->outputs()) collectSymbols(output->shape(), summary.symbols);
    for (Graph* subgraph : node->subgraphs()) summarize(*subgraph, summary);
  }
}

std::string valueLabel(const Value* value) {
  return value->name().empty() ? "(unnamed)" : "%" + value->name();
}

void printValues(std::ostream& out, const char* title, const std::vector<Value*>& values,
                 const Graph& graph) {
  out << title << " (" << values.size() << "):\n";
  for (const Value* value : values) {
    out << "  " << std::left << std::setw(24) << valueLabel(value) << " " << value->type().str();
    if (value->isMutableInput()) {
      out << "  mutable";
      if (const Value* update = graph.inputUpdate(value)) out << ", updated to " << valueLabel(update);
    }
    out << "\n";
  }
}

}  // namespace

Parameters countParameters(const Graph& graph) {
  Parameters parameters;
  for (const Node* node : graph.nodes()) {
    if (node->is("Constant")) {
      if (const Attribute* value = node->attr("value"); value && value->kind() == AttrKind::Tensor) {
        ++parameters.constants;
        parameters.elements += value->asTensor().numElements();
        parameters.bytes += value->asTensor().byteSize();
      }
    }
    for (const Graph* subgraph : node->subgraphs()) {
      Parameters inner = countParameters(*subgraph);
      parameters.constants += inner.constants;
      parameters.elements += inner.elements;
      parameters.bytes += inner.bytes;
    }
  }
  return parameters;
}

int runInspect(const std::vector<std::string>& argv) {
  Arguments args("inspect", "FILE [options]",
                 "Prints a graph's inputs and outputs with their shapes, the op histogram, the\n"
                 "parameter count (elements of Constant tensors) and the symbolic dimensions.",
                 {{"values", "", "also list every node output with its shape", ""}});
  if (!args.parse(argv)) return 0;
  if (args.positionals().size() != 1) usageError("estuary inspect: expected one FILE (see --help)");
  const std::string& path = args.positionals()[0];
  std::unique_ptr<Graph> graph = readGraphFile(path);

  Summary summary;
  summarize(*graph, summary);
  std::ostream& out = std::cout;
  out << "graph '" << graph->name() << "' from " << path << "\n";
  printValues(out, "inputs", graph->inputs(), *graph);
  printValues(out, "outputs", graph->outputs(), *graph);
  out << "nodes: " << summary.nodes << " (" << graph->numNodes() << " at top level)\n";
  Parameters parameters = countParameters(*graph);
  out << "parameters: " << parameters.elements << " in " << parameters.constants << " constants ("
      << parameters.bytes << " bytes)\n";
  out << "symbolic dims:";
  for (const std::string& symbol : summary.symbols) out << " " << symbol;
  out << (summary.symbols.empty() ? " none\n" : "\n");

  std::vector<std::pair<std::string, size_t>> ops(summary.op_counts.begin(), summary.op_counts.end());
  std::stable_sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  out << "ops (" << ops.size() << " kinds):\n";
  for (const auto& [op, count] : ops) out << "  " << std::left << std::setw(28) << op << count << "\n";

  if (args.flag("values")) {
    out << "values:\n";
    for (Node* node : graph->nodes()) {
      for (Value* output : node->outputs()) {
        out << "  " << std::left << std::setw(24) << valueLabel(output) << " " << std::setw(24)
            << output->type().str() << node->describe() << "\n";
      }
    }
  }
  return 0;
}

}  // namespace estuary::cli
