// estuary bench: latency percentiles and throughput of a model on random inputs.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <random>

#include "arguments.h"
#include "commands.h"
#include "plugins.h"
#include "estuary/ge/offline_model.h"
#include "estuary/sdk/build.h"
#include "estuary/support/error.h"

namespace estuary::cli {

namespace {

using Clock = std::chrono::steady_clock;

// Concrete dims for every input: static dims as they are, symbolic ones from --input-shape,
// then --batch for a leading symbolic dim, then from another input that fixed the same
// symbol.
std::vector<std::vector<int64_t>> resolveShapes(const ge::CompiledModel& model, const InputShapes& shapes,
                                                int64_t batch) {
  for (const auto& [name, dims] : shapes) model.inputIndex(name);  // raises naming an unknown input
  std::vector<std::vector<int64_t>> resolved;
  std::map<std::string, int64_t> symbols;
  for (const ge::IoInfo& io : model.inputs()) {
    if (!io.type.shape.isRanked()) raise("input '", io.name, "' has type ", io.type.str(), "; it needs a rank");
    auto given = shapes.find(io.name);
    if (given != shapes.end() && given->second.size() != io.type.shape.rank()) {
      raise("--input-shape: input '", io.name, "' has rank ", io.type.shape.rank(), " (", io.type.str(), "), ",
            given->second.size(), " dims were given");
    }
    std::vector<int64_t> dims(io.type.shape.rank(), -1);
    for (size_t d = 0; d < dims.size(); ++d) {
      const Dim& dim = io.type.shape[d];
      int64_t value = given != shapes.end() ? given->second[d] : -1;
      if (dim.isStatic()) {
        if (value >= 0 && value != dim.value()) {
          raise("--input-shape: input '", io.name, "' dim ", d, " is ", dim.value(), " (", io.type.str(), "), ",
                value, " was given");
        }
        value = dim.value();
      } else if (value < 0 && d == 0 && batch > 0) {
        value = batch;
      }
      if (value >= 0 && !plainSymbol(dim).empty()) symbols.emplace(plainSymbol(dim), value);
      dims[d] = value;
    }
    resolved.push_back(std::move(dims));
  }
  for (size_t i = 0; i < resolved.size(); ++i) {
    const ge::IoInfo& io = model.inputs()[i];
    for (size_t d = 0; d < resolved[i].size(); ++d) {
      if (resolved[i][d] >= 0) continue;
      auto bound = symbols.find(plainSymbol(io.type.shape[d]));
      if (bound != symbols.end()) {
        resolved[i][d] = bound->second;
        continue;
      }
      raise("input '", io.name, "' (", io.type.str(), "): dim ", d, " ('", io.type.shape[d].str(),
            "') needs a size; give it with --input-shape ", io.name, ":...", d == 0 ? " or --batch" : "");
    }
  }
  return resolved;
}

// Random data of the model's types: floats in (-1, 1) (f16 and bf16 made bitwise, in
// [2^-5, 1) with either sign), integers in [0, 16), booleans.
Tensor randomTensor(DType dtype, const std::vector<int64_t>& dims, std::mt19937_64& random) {
  Tensor tensor = Tensor::allocate(dtype, dims);
  const size_t count = static_cast<size_t>(tensor.numElements());
  void* data = tensor.mutableData();
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  auto fill = [&](auto* values, auto make) {
    for (size_t i = 0; i < count; ++i) values[i] = make();
  };
  auto bits = [&](int exponent_low, int exponent_count, int mantissa_bits, int exponent_shift) {
    return [&, exponent_low, exponent_count, mantissa_bits, exponent_shift] {
      uint64_t word = random();
      uint16_t sign = static_cast<uint16_t>(word & 1) << 15;
      uint16_t exponent = static_cast<uint16_t>(exponent_low + static_cast<int>((word >> 1) % exponent_count));
      uint16_t mantissa = static_cast<uint16_t>((word >> 8) & ((1u << mantissa_bits) - 1));
      return static_cast<uint16_t>(sign | exponent << exponent_shift | mantissa);
    };
  };
  switch (dtype) {
    case DType::F32: fill(static_cast<float*>(data), [&] { return static_cast<float>(real(random)); }); break;
    case DType::F64: fill(static_cast<double*>(data), [&] { return real(random); }); break;
    case DType::F16: fill(static_cast<uint16_t*>(data), bits(10, 5, 10, 10)); break;
    case DType::BF16: fill(static_cast<uint16_t*>(data), bits(122, 5, 7, 7)); break;
    case DType::I8: fill(static_cast<int8_t*>(data), [&] { return static_cast<int8_t>(random() % 16); }); break;
    case DType::I16: fill(static_cast<int16_t*>(data), [&] { return static_cast<int16_t>(random() % 16); }); break;
    case DType::I32: fill(static_cast<int32_t*>(data), [&] { return static_cast<int32_t>(random() % 16); }); break;
    case DType::I64: fill(static_cast<int64_t*>(data), [&] { return static_cast<int64_t>(random() % 16); }); break;
    case DType::U8: fill(static_cast<uint8_t*>(data), [&] { return static_cast<uint8_t>(random() % 16); }); break;
    case DType::Bool: fill(static_cast<uint8_t*>(data), [&] { return static_cast<uint8_t>(random() & 1); }); break;
    case DType::Undefined: raise("cannot make random data of an undefined element type");
  }
  return tensor;
}

// The nearest-rank percentile of sorted samples.
double percentile(const std::vector<double>& sorted, double p) {
  size_t rank = static_cast<size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

// "node 'x' (Conv) -> onednn:conv" -> "Conv -> onednn:conv": the step's op and kernel.
std::string opAndKernel(const std::string& label) {
  size_t open = label.find(" (");
  size_t close = label.find(')', open == std::string::npos ? 0 : open);
  if (open == std::string::npos || close == std::string::npos) return label;
  return label.substr(open + 2, close - open - 2) + label.substr(close + 1);
}

void printProfile(std::ostream& out, const std::vector<ge::StepProfile>& steps, size_t slowest) {
  if (steps.empty() || steps.front().runs == 0) return;
  const double runs = static_cast<double>(steps.front().runs);
  double total = 0;
  std::map<std::string, std::pair<double, size_t>> by_kind;  // seconds, steps
  for (const ge::StepProfile& step : steps) {
    total += step.seconds;
    auto& [seconds, count] = by_kind[opAndKernel(step.label)];
    seconds += step.seconds;
    ++count;
  }
  std::vector<std::pair<std::string, std::pair<double, size_t>>> kinds(by_kind.begin(), by_kind.end());
  std::sort(kinds.begin(), kinds.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  out << "profile     " << steps.size() << " steps, " << formatSeconds(total / runs) << " per run (mean of "
      << steps.front().runs << " profiled runs)\n";
  out << "  share  per run     steps  op -> kernel\n";
  auto row = [&](double seconds, const std::string& count, const std::string& what) {
    out << "  " << std::right << std::setw(4) << std::fixed << std::setprecision(1) << 100.0 * seconds / total << "%  "
        << std::left << std::setw(10) << formatSeconds(seconds / runs) << std::right << std::setw(7) << count << "  "
        << std::left << what << "\n"
        << std::defaultfloat;
  };
  for (const auto& [kind, figures] : kinds) row(figures.first, std::to_string(figures.second), kind);
  std::vector<const ge::StepProfile*> ordered;
  for (const ge::StepProfile& step : steps) ordered.push_back(&step);
  std::sort(ordered.begin(), ordered.end(), [](auto* a, auto* b) { return a->seconds > b->seconds; });
  out << "  slowest steps:\n";
  for (size_t i = 0; i < std::min(slowest, ordered.size()); ++i) row(ordered[i]->seconds, "", ordered[i]->label);
}

}  // namespace

int runBench(const std::vector<std::string>& argv) {
  Arguments args(
      "bench", "MODEL [options]",
      "Measures a model on random inputs of its input types: latency percentiles (p50, p90,\n"
      "p99), min and mean, throughput, build or load time, planning time and peak RSS. MODEL is\n"
      "an offline model (.eom) or an IR file, which is built first. Symbolic input dims take\n"
      "their sizes from --input-shape, a leading one from --batch.",
      {
          {"batch", "N", "size of each input's leading symbolic dim", ""},
          {"input-shape", "SPEC", "input dims: \"x:8,3,224,224;y:-1,128\" (-1: from --batch or another input)", ""},
          {"threads", "N", "intra-op threads; 0 is one per core; a run uses fewer while other processes keep cores busy", "0"},
          deviceOption(),
          pluginOption("loading the model: one whose ops it brings"),
          {"warmup", "N", "untimed runs first", "10"},
          {"iterations", "N", "timed runs", "100"},
          {"seed", "N", "seed of the random inputs", "0"},
          {"profile", "", "after the timed runs, time every step of as many more runs and print where\n"
                          "the time goes: per op and kernel, then the slowest nodes", ""},
          {"profile-steps", "N", "with --profile: how many of the slowest nodes to list; 0 lists every node", "15"},
      });
  args.addOptions(limitOptionDecls());
  if (!args.parse(argv)) return 0;
  if (args.positionals().size() != 1) usageError("estuary bench: expected one MODEL file (see --help)");
  const std::string& path = args.positionals()[0];
  const int64_t batch = integerOption("bench", "batch", args.value("batch"), 0, 1);
  const int64_t warmup = integerOption("bench", "warmup", args.value("warmup"), 10, 0);
  const int64_t profile_steps = integerOption("bench", "profile-steps", args.value("profile-steps"), 15, 0);
  const int64_t iterations = integerOption("bench", "iterations", args.value("iterations"), 100, 1);
  const int64_t seed = integerOption("bench", "seed", args.value("seed"), 0, 0);
  // The shapes are the runs' shapes: an IR file is built with its symbolic dims kept.
  sdk::BuildConfig run_shapes;
  setInputShapes(run_shapes, args.value("input-shape").value_or(""));
  if (!run_shapes.input_ranges.empty()) usageError("estuary bench: --input-shape needs sizes to run with, not ranges");
  const InputShapes& shapes = run_shapes.input_shapes;

  std::shared_ptr<ge::CompiledModel> opened = sdk::openModel(path, backendConfigFrom("bench", args));
  const bool built_from_ir = !ge::isOfflineModelFile(path);
  ge::CompiledModel& model = *opened;

  std::mt19937_64 random(static_cast<uint64_t>(seed));
  std::vector<std::vector<int64_t>> dims = resolveShapes(model, shapes, batch);
  std::vector<Tensor> arrays;
  std::vector<ge::HostTensor> inputs;
  for (size_t i = 0; i < dims.size(); ++i) {
    arrays.push_back(randomTensor(model.inputs()[i].type.dtype, dims[i], random));
    inputs.push_back(ge::HostTensor::of(ge::TensorDesc::of(arrays[i].dtype(), dims[i]), arrays[i].mutableData()));
  }

  std::unique_ptr<ge::RunContext> context = model.createContext();
  context->outputDescs(inputs);  // plans this shape signature unless the model has it already
  for (int64_t i = 0; i < warmup; ++i) context->run(inputs);
  std::vector<double> latencies;
  latencies.reserve(static_cast<size_t>(iterations));
  auto timed = Clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    auto start = Clock::now();
    context->run(inputs);
    latencies.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const double total = std::chrono::duration<double>(Clock::now() - timed).count();
  std::vector<double> sorted = latencies;
  std::sort(sorted.begin(), sorted.end());
  double mean = 0;
  for (double latency : latencies) mean += latency / static_cast<double>(latencies.size());
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);

  std::ostream& out = std::cout;
  out << "model       " << path << (built_from_ir ? " (built from IR, " : " (offline model, ") << model.device().name() << "/" << model.device().isa() << "), "
      << model.numThreads() << " threads\n";
  out << "inputs     ";
  for (size_t i = 0; i < inputs.size(); ++i) out << " " << model.inputs()[i].name << ": " << inputs[i].desc().str();
  out << "\n";
  // How the model was made (built from IR, or loaded), then a plan per shape signature.
  for (const ge::BuildReport::Stage& stage : model.report().stages) {
    out << "stage       " << std::left << std::setw(32) << stage.name
        << formatSeconds(stage.seconds) << "\n";
  }
  out << "iterations  " << iterations << " after " << warmup << " warm-up runs\n";
  out << "latency     min " << formatSeconds(sorted.front()) << "  mean " << formatSeconds(mean) << "  p50 "
      << formatSeconds(percentile(sorted, 50)) << "  p90 " << formatSeconds(percentile(sorted, 90)) << "  p99 "
      << formatSeconds(percentile(sorted, 99)) << "\n";
  const double per_second = static_cast<double>(iterations) / total;
  out << "throughput  " << std::fixed << std::setprecision(1) << per_second << " inferences/s";
  if (batch > 0) out << " (" << per_second * static_cast<double>(batch) << " samples/s at batch " << batch << ")";
  out << "\n" << std::defaultfloat;
  out << "peak RSS    " << formatByteSize(static_cast<double>(usage.ru_maxrss) * 1024) << "\n";
  if (args.flag("profile")) {
    context->setProfiling(true);
    for (int64_t i = 0; i < iterations; ++i) context->run(inputs);
    printProfile(out, context->profile(),
                 profile_steps == 0 ? std::numeric_limits<size_t>::max() : static_cast<size_t>(profile_steps));
  }
  return 0;
}

}  // namespace estuary::cli
