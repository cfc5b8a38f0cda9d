// estuary run: a model, inputs from .npy/.npz, outputs to .npz.
#include <chrono>
#include <iostream>
#include <set>

#include "arguments.h"
#include "commands.h"
#include "plugins.h"
#include "estuary/sdk/build.h"
#include "estuary/support/error.h"
#include "npy.h"

namespace estuary::cli {

namespace {

struct GivenInput {
  Tensor array;
  std::string source;  // "x.npy" or "in.npz:x"
};

std::string modelInputNames(const ge::CompiledModel& model) {
  std::string names;
  for (const ge::IoInfo& io : model.inputs()) names += (names.empty() ? "" : ", ") + io.name;
  return names;
}

// The arrays named by --input NAME=FILE.npy and --inputs FILE.npz, by input name.
std::map<std::string, GivenInput> readInputs(const Arguments& args, const ge::CompiledModel& model) {
  std::map<std::string, GivenInput> given;
  auto add = [&](const std::string& name, Tensor array, const std::string& source) {
    bool known = false;
    for (const ge::IoInfo& io : model.inputs()) known |= io.name == name;
    if (!known) raise(source, ": the model has no input '", name, "' (inputs: ", modelInputNames(model), ")");
    auto [previous, inserted] = given.try_emplace(name, GivenInput{std::move(array), source});
    if (!inserted) raise(source, ": input '", name, "' is also given by ", previous->second.source);
  };
  for (const std::string& spec : args.values("input")) {
    size_t equals = spec.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == spec.size()) {
      usageError("estuary run: --input needs NAME=FILE.npy, got '", spec, "'");
    }
    std::string path = spec.substr(equals + 1);
    add(spec.substr(0, equals), readNpy(path), path);
  }
  for (const std::string& path : args.values("inputs")) {
    for (NamedArray& entry : readNpz(path)) add(entry.name, std::move(entry.array), path + ":" + entry.name);
  }
  return given;
}

// A symbolic dim's size as the first input that has it fixed it, and where that came from.
struct SymbolBinding {
  int64_t value;
  std::string source;
};

// Checks an array against the model input it feeds: dtype, rank, static dims, and symbolic
// dims against the sizes earlier inputs gave the same symbol.
void checkInput(const ge::IoInfo& io, const GivenInput& input, std::map<std::string, SymbolBinding>& symbols) {
  const Tensor& array = input.array;
  auto refuse = [&](const std::string& detail) {
    raise(input.source, ": input '", io.name, "' expects ", io.type.str(), detail, ", the file holds ",
          describeArray(array));
  };
  bool matches = array.dtype() == io.type.dtype && array.shape().size() == io.type.shape.rank();
  for (size_t d = 0; matches && d < array.shape().size(); ++d) {
    const Dim& dim = io.type.shape[d];
    matches = !dim.isStatic() || dim.value() == array.shape()[d];
  }
  if (!matches) refuse("");
  for (size_t d = 0; d < array.shape().size(); ++d) {
    std::string symbol = plainSymbol(io.type.shape[d]);
    if (symbol.empty()) continue;
    auto [bound, inserted] = symbols.try_emplace(symbol, SymbolBinding{array.shape()[d], input.source});
    if (!inserted && bound->second.value != array.shape()[d]) {
      refuse(" with " + symbol + " = " + std::to_string(bound->second.value) + " (from " + bound->second.source + ")");
    }
  }
}

// Output names as the .npz keys: the graph's names, made unique, "output_K" for unnamed ones.
std::vector<std::string> outputNames(const ge::CompiledModel& model) {
  std::vector<std::string> names;
  std::set<std::string> taken;
  for (size_t k = 0; k < model.outputs().size(); ++k) {
    std::string base = model.outputs()[k].name.empty() ? "output_" + std::to_string(k) : model.outputs()[k].name;
    std::string name = base;
    for (int suffix = 1; !taken.insert(name).second; ++suffix) name = base + "_" + std::to_string(suffix);
    names.push_back(name);
  }
  return names;
}

}  // namespace

int runRun(const std::vector<std::string>& argv) {
  Arguments args(
      "run", "MODEL -o OUTPUT.npz (--input NAME=FILE.npy ... | --inputs FILE.npz) [options]",
      "Runs a model once. MODEL is an offline model (.eom) or an IR file, which is built first.\n"
      "Inputs come from .npy files (one per input) and/or .npz archives (arrays named after the\n"
      "inputs); outputs go into an .npz archive, one array per graph output. bfloat16 arrays are\n"
      "read and written as two-byte void ('<V2'), how ml_dtypes saves them.",
      {
          {"output", "FILE", "the .npz archive to write the outputs to (-o)", ""},
          {"input", "NAME=FILE", "an input from a .npy file (repeatable)", "", true},
          {"inputs", "FILE", "inputs from an .npz archive, by array name (repeatable)", "", true},
          {"threads", "N", "intra-op threads; 0 is one per core; a run uses fewer while other processes keep cores busy", "0"},
          deviceOption(),
          pluginOption("loading the model: one whose ops it brings"),
          {"compress", "", "deflate the output archive, like np.savez_compressed", ""},
          {"quiet", "", "print nothing but errors", ""},
      });
  std::vector<std::string> rest = argv;
  for (std::string& arg : rest) {
    if (arg == "-o") arg = "--output";
  }
  args.addOptions(limitOptionDecls());
  if (!args.parse(rest)) return 0;
  if (args.positionals().size() != 1) usageError("estuary run: expected one MODEL file (see --help)");
  auto output = args.value("output");
  if (!output) usageError("estuary run: missing -o OUTPUT.npz (see --help)");
  const std::string& path = args.positionals()[0];

  std::shared_ptr<ge::CompiledModel> model = sdk::openModel(path, backendConfigFrom("run", args));

  std::map<std::string, GivenInput> given = readInputs(args, *model);
  std::vector<ge::HostTensor> inputs;
  std::map<std::string, SymbolBinding> symbols;
  for (const ge::IoInfo& io : model->inputs()) {
    auto it = given.find(io.name);
    if (it == given.end()) {
      raise("input '", io.name, "' (", io.type.str(), ") of ", path, " is not given; pass --input ", io.name,
            "=FILE.npy or an --inputs archive holding '", io.name, "'");
    }
    checkInput(io, it->second, symbols);
    Tensor& array = it->second.array;
    inputs.push_back(ge::HostTensor::of(ge::TensorDesc::of(array.dtype(), array.shape()), array.mutableData()));
  }

  std::unique_ptr<ge::RunContext> context = model->createContext();
  using Clock = std::chrono::steady_clock;
  auto started = Clock::now();
  context->outputDescs(inputs);  // plans this shape signature unless the model has it already
  auto planned = Clock::now();
  const std::vector<ge::HostTensor>& results = context->run(inputs);
  auto finished = Clock::now();

  std::vector<std::string> names = outputNames(*model);
  std::vector<NamedArray> arrays;
  for (size_t k = 0; k < results.size(); ++k) {
    const ge::HostTensor& result = results[k];
    std::vector<int64_t> dims(result.dims.begin(), result.dims.begin() + result.rank);
    arrays.push_back({names[k], Tensor::wrap(result.dtype, dims, result.data, nullptr)});
  }
  writeNpz(*output, arrays, args.flag("compress"));
  if (args.flag("quiet")) return 0;
  std::cout << "ran " << path << " in " << formatSeconds(std::chrono::duration<double>(finished - planned).count())
            << " (planning " << formatSeconds(std::chrono::duration<double>(planned - started).count()) << ")\n";
  for (const NamedArray& array : arrays) std::cout << "  " << array.name << ": " << describeArray(array.array) << "\n";
  std::cout << "wrote " << *output << "\n";
  return 0;
}

}  // namespace estuary::cli
