#pragma once
// Test harness for the tensor kernels (shape ops, indexing, generators, reductions,
// resize): tensors held as doubles already rounded to their dtype (so a reference loop
// sees exactly what the kernel sees), encoded to any dtype, graphs written in the IR text
// form, a build and run through CompiledModel, and row-major index helpers for the
// reference loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/ge/model.h"
#include "estuary/text/parser.h"

namespace estuary::ge::tensor_test {

inline constexpr DType kEveryDType[] = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,
                                        DType::I16, DType::I32,  DType::I64,  DType::U8,  DType::Bool};

struct TestTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> dims;
  std::vector<double> values;

  int64_t count() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  std::string type() const {
    std::string text = std::string(dtypeName(dtype)) + "[";
    for (size_t i = 0; i < dims.size(); ++i) text += (i ? "," : "") + std::to_string(dims[i]);
    return text + "]";
  }
};

// --- Rounding to a dtype (the tests' own reference, independent of the kernels') -----------

// Round to nearest even at `bits` significant bits, with the format's subnormal spacing and
// overflow threshold (RNE of the exact double, so no double rounding through f32).
inline double roundToFormat(double value, int bits, int min_exponent, double max_finite) {
  if (std::isnan(value) || std::isinf(value) || value == 0) return value;
  int exponent;
  std::frexp(value, &exponent);  // value = m * 2^exponent, 0.5 <= |m| < 1
  int quantum = std::max(exponent, min_exponent) - bits;
  double rounded = std::ldexp(std::nearbyint(std::ldexp(value, -quantum)), quantum);
  // Past the largest finite value by half a unit or more: Inf.
  double half_unit_above = max_finite + std::ldexp(1.0, std::ilogb(max_finite) - bits);
  if (std::fabs(value) >= half_unit_above) return std::copysign(std::numeric_limits<double>::infinity(), value);
  return rounded == 0 ? std::copysign(0.0, value) : rounded;
}
inline double roundToF16(double value) { return roundToFormat(value, 11, -13, 65504.0); }
inline double roundToBF16(double value) { return roundToFormat(value, 8, -125, 3.3895313892515355e38); }
inline double roundToF32(double value) { return roundToFormat(value, 24, -125, 3.4028234663852886e38); }

// The bits of a bf16 value (the rounded `value`; NaN as the quiet NaN).
inline uint16_t bf16BitsOf(double value) {
  if (std::isnan(value)) return 0x7FC0;
  float rounded = static_cast<float>(roundToBF16(value));
  uint32_t bits;
  std::memcpy(&bits, &rounded, 4);
  return static_cast<uint16_t>(bits >> 16);
}

inline double bf16Value(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float result;
  std::memcpy(&result, &wide, 4);
  return result;
}

// `value` as the dtype holds it; integers round to nearest and wrap around like C++
// integer arithmetic does.
inline double roundTo(DType dtype, double value) {
  auto wrapped = [&](auto typed) {
    return static_cast<double>(static_cast<decltype(typed)>(static_cast<int64_t>(std::nearbyint(value))));
  };
  switch (dtype) {
    case DType::F32: return roundToF32(value);
    case DType::F16: return roundToF16(value);
    case DType::BF16: return roundToBF16(value);
    case DType::F64: return value;
    case DType::Bool: return value != 0 ? 1 : 0;
    case DType::I8: return wrapped(int8_t{});
    case DType::I16: return wrapped(int16_t{});
    case DType::I32: return wrapped(int32_t{});
    case DType::U8: return wrapped(uint8_t{});
    default: return std::nearbyint(value);
  }
}

inline TestTensor tensorOf(DType dtype, std::vector<int64_t> dims, std::vector<double> values) {
  TestTensor tensor{dtype, std::move(dims), std::move(values)};
  EXPECT_EQ(static_cast<int64_t>(tensor.values.size()), tensor.count()) << tensor.type();
  for (double& v : tensor.values) v = roundTo(dtype, v);
  return tensor;
}

// Seeded values that every dtype holds exactly for data movement tests: small whole
// numbers for integers (0/1 for bool, non-negative for u8), fractions for floats.
inline TestTensor sampleTensor(DType dtype, std::vector<int64_t> dims, uint32_t seed) {
  TestTensor tensor{dtype, std::move(dims), {}};
  std::mt19937 random(seed);
  std::uniform_int_distribution<int> pick(-60, 60);
  tensor.values.resize(static_cast<size_t>(tensor.count()));
  for (double& v : tensor.values) {
    int n = pick(random);
    if (dtype == DType::Bool) {
      v = n > 0 ? 1 : 0;
    } else if (dtype == DType::U8) {
      v = n + 60;
    } else if (isFloatingPoint(dtype)) {
      v = roundTo(dtype, n / 8.0);
    } else {
      v = n;
    }
  }
  return tensor;
}

// Seeded random values in [low, high] rounded to the dtype.
inline TestTensor randomTensor(DType dtype, std::vector<int64_t> dims, uint32_t seed, double low = -1.0,
                               double high = 1.0) {
  TestTensor tensor{dtype, std::move(dims), {}};
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  tensor.values.resize(static_cast<size_t>(tensor.count()));
  for (double& v : tensor.values) v = roundTo(dtype, uniform(random));
  return tensor;
}

inline std::vector<std::byte> encode(const TestTensor& tensor) {
  const size_t size = dtypeSize(tensor.dtype);
  std::vector<std::byte> bytes(tensor.values.size() * size + 1);  // +1: never a null data pointer
  for (size_t i = 0; i < tensor.values.size(); ++i) {
    double v = tensor.values[i];
    std::byte* at = bytes.data() + i * size;
    auto put = [&](auto typed) { std::memcpy(at, &typed, sizeof typed); };
    switch (tensor.dtype) {
      case DType::F32: put(static_cast<float>(v)); break;
      case DType::F16: put(static_cast<_Float16>(v)); break;
      case DType::BF16: put(bf16BitsOf(v)); break;
      case DType::F64: put(v); break;
      case DType::I8: put(static_cast<int8_t>(v)); break;
      case DType::I16: put(static_cast<int16_t>(v)); break;
      case DType::I32: put(static_cast<int32_t>(v)); break;
      case DType::I64: put(static_cast<int64_t>(v)); break;
      case DType::U8: put(static_cast<uint8_t>(v)); break;
      case DType::Bool: put(static_cast<uint8_t>(v != 0)); break;
      default: ADD_FAILURE() << "cannot encode " << dtypeName(tensor.dtype);
    }
  }
  return bytes;
}

inline double decodeOne(DType dtype, const void* data, size_t i) {
  auto get = [&](auto typed) {
    std::memcpy(&typed, static_cast<const std::byte*>(data) + i * sizeof typed, sizeof typed);
    return typed;
  };
  switch (dtype) {
    case DType::F32: return get(float{});
    case DType::F16: return static_cast<double>(get(_Float16{}));
    case DType::BF16: return bf16Value(get(uint16_t{}));
    case DType::F64: return get(double{});
    case DType::I8: return get(int8_t{});
    case DType::I16: return get(int16_t{});
    case DType::I32: return get(int32_t{});
    case DType::I64: return static_cast<double>(get(int64_t{}));
    case DType::U8: return get(uint8_t{});
    case DType::Bool: return get(uint8_t{});
    default: return NAN;
  }
}

// `  %name = Constant() {value = tensor<...> 0x...} : type` for a graph body.
inline std::string constantLine(const std::string& name, const TestTensor& tensor) {
  std::vector<std::byte> bytes = encode(tensor);
  bytes.pop_back();
  std::ostringstream text;
  text << "  %" << name << " = Constant() {value = tensor<" << tensor.type() << "> ";
  if (bytes.empty()) {
    text << "[]";
  } else {
    text << "0x";
    static const char* digits = "0123456789abcdef";
    for (std::byte b : bytes) {
      auto value = static_cast<unsigned>(b);
      text << digits[value >> 4] << digits[value & 15];
    }
  }
  text << "} : " << tensor.type() << "\n";
  return text.str();
}

// `graph @g(%name: type, ...) {` followed by `body` and `return outputs }`.
inline std::string graphText(const std::vector<std::pair<std::string, const TestTensor*>>& inputs,
                             const std::string& body, const std::string& outputs) {
  std::string text = "graph @g(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    text += (i ? ", %" : "%") + inputs[i].first + ": " + inputs[i].second->type();
  }
  return text + ") {\n" + body + "  return " + outputs + "\n}";
}

struct RunResult {
  std::vector<TestTensor> outputs;
  std::vector<std::string> kernels;  // the build report's kernel lines
};

// Builds `graph_text` for `device` and runs it once on `inputs` (graph input order).
inline RunResult runGraph(const std::string& graph_text, const std::vector<TestTensor>& inputs, int threads = 2,
                          const Device& device = cpuDevice()) {
  auto graph = parseGraph(graph_text);
  BuildOptions options;
  options.num_threads = threads;
  auto model = CompiledModel::build(*graph, options, device);
  auto context = model->createContext();
  std::vector<std::vector<std::byte>> storage;
  std::vector<HostTensor> hosts;
  for (const TestTensor& input : inputs) {
    storage.push_back(encode(input));
    hosts.push_back(HostTensor::of(TensorDesc::of(input.dtype, input.dims), storage.back().data()));
  }
  const std::vector<HostTensor>& outputs = context->run(hosts);
  RunResult result;
  for (const HostTensor& output : outputs) {
    TestTensor tensor{output.dtype, std::vector<int64_t>(output.dims.begin(), output.dims.begin() + output.rank), {}};
    tensor.values.resize(static_cast<size_t>(tensor.count()));
    for (size_t i = 0; i < tensor.values.size(); ++i) tensor.values[i] = decodeOne(output.dtype, output.data, i);
    result.outputs.push_back(std::move(tensor));
  }
  result.kernels = model->report().kernels;
  return result;
}

// 64-byte aligned bytes, as the memory planner gives kernels.
class AlignedBuffer {
 public:
  explicit AlignedBuffer(size_t bytes) : storage_(bytes + 64) {}
  void* data() {
    auto address = reinterpret_cast<uintptr_t>(storage_.data());
    return reinterpret_cast<void*>((address + 63) & ~uintptr_t{63});
  }

 private:
  std::vector<std::byte> storage_;
};

struct KernelRunOptions {
  int threads = 1;      // the threads the kernel is built for
  int run_threads = 0;  // the threads it runs on (0: as built), as a run on a busy machine gets fewer
  // Inputs the kernel's factory sees as constants (their values known at build time).
  std::vector<size_t> constants;
  // Give output 0 the buffer of the input the kernel names in inPlaceInput(0), as the memory
  // planner would.
  bool in_place = false;
};

struct KernelRun {
  std::vector<TestTensor> outputs;
  std::string kernel;              // the kernel's name()
  std::optional<size_t> in_place;  // what the kernel offered for output 0
  bool ran_in_place = false;
};

// Creates `device`'s kernel for `node` from explicit descs and runs it once, bypassing the
// planner: for ops the build always folds or removes (Identity, Shape, Dropout), for checking
// what a kernel does at run time, and to run one node on two devices. Inputs of dtype
// Undefined are absent (an optional input left off).
inline KernelRun runKernel(const Node& node, const Device& device, const std::vector<TestTensor>& inputs,
                           const std::vector<TensorDesc>& out_descs, const KernelRunOptions& options = {}) {
  std::vector<TensorDesc> in_descs;
  std::vector<const Tensor*> constants;
  std::vector<std::unique_ptr<Tensor>> constant_tensors;
  std::vector<std::unique_ptr<AlignedBuffer>> buffers;
  std::vector<void*> pointers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TestTensor& input = inputs[i];
    if (input.dtype == DType::Undefined) {
      in_descs.emplace_back();
      constants.push_back(nullptr);
      pointers.push_back(nullptr);
      continue;
    }
    in_descs.push_back(TensorDesc::of(input.dtype, input.dims));
    buffers.push_back(std::make_unique<AlignedBuffer>(in_descs.back().byteSize()));
    const std::vector<std::byte> bytes = encode(input);
    std::memcpy(buffers.back()->data(), bytes.data(), in_descs.back().byteSize());
    pointers.push_back(buffers.back()->data());
    const bool constant = std::find(options.constants.begin(), options.constants.end(), i) != options.constants.end();
    if (constant) {
      constant_tensors.push_back(std::make_unique<Tensor>(Tensor::copyOf(input.dtype, input.dims, pointers.back())));
    }
    constants.push_back(constant ? constant_tensors.back().get() : nullptr);
  }

  KernelBuildContext context(node, in_descs, out_descs, constants, device, options.threads);
  std::shared_ptr<const Kernel> kernel = device.kernels().create(context);
  KernelRun run;
  run.kernel = kernel->name();
  run.in_place = kernel->inPlaceInput(0);
  for (size_t k = 0; k < out_descs.size(); ++k) {
    if (k == 0 && options.in_place && run.in_place && in_descs[*run.in_place].byteSize() == out_descs[0].byteSize()) {
      pointers.push_back(pointers[*run.in_place]);
      run.ran_in_place = true;
      continue;
    }
    buffers.push_back(std::make_unique<AlignedBuffer>(out_descs[k].byteSize()));
    pointers.push_back(buffers.back()->data());
  }
  AlignedBuffer scratch(kernel->scratchBytes());
  std::unique_ptr<DeviceRunState> device_state = device.createRunState();
  std::unique_ptr<KernelState> state = kernel->createState();
  KernelArgs args{pointers.data(), pointers.data() + inputs.size(), scratch.data(),
                  options.run_threads > 0 ? options.run_threads : options.threads, device_state.get()};
  kernel->run(args, state.get());
  for (size_t k = 0; k < out_descs.size(); ++k) {
    TestTensor output{out_descs[k].dtype, out_descs[k].dimVector(), {}};
    output.values.resize(static_cast<size_t>(output.count()));
    for (size_t i = 0; i < output.values.size(); ++i) {
      output.values[i] = decodeOne(output.dtype, pointers[inputs.size() + k], i);
    }
    run.outputs.push_back(std::move(output));
  }
  return run;
}

// runKernel on `device`'s kernel of the first node of `graph_text`, whose outputs have the
// dtypes and dims of `output_shapes`; `constant` marks inputs the factory sees as constants.
inline std::vector<TestTensor> runKernelDirectly(const std::string& graph_text, const std::vector<TestTensor>& inputs,
                                                 const std::vector<bool>& constant,
                                                 const std::vector<TestTensor>& output_shapes, int threads = 2,
                                                 int run_threads = 0, const Device& device = cpuDevice()) {
  auto graph = parseGraph(graph_text);
  KernelRunOptions options;
  options.threads = threads;
  options.run_threads = run_threads;
  for (size_t i = 0; i < constant.size(); ++i) {
    if (constant[i]) options.constants.push_back(i);
  }
  std::vector<TensorDesc> out_descs;
  for (const TestTensor& shape : output_shapes) out_descs.push_back(TensorDesc::of(shape.dtype, shape.dims));
  return runKernel(**graph->nodes().begin(), device, inputs, out_descs, options).outputs;
}

// The message of the Error that building or running the graph raises, or "no error".
inline std::string errorOf(const std::string& graph_text, const std::vector<TestTensor>& inputs) {
  try {
    runGraph(graph_text, inputs);
  } catch (const Error& error) {
    return error.what();
  }
  return "no error";
}

// Relative tolerance of one rounding to the dtype, with a margin for accumulation.
inline double dtypeTolerance(DType dtype) {
  switch (dtype) {
    case DType::F32: return 2e-5;
    case DType::F16: return 2e-3;
    case DType::BF16: return 1e-2;
    case DType::F64: return 1e-12;
    default: return 0.0;
  }
}

// Every value within atol + rtol * |expected| (NaN matches NaN); reports the first misses.
inline void expectNear(const TestTensor& actual, const std::vector<double>& expected, double rtol, double atol,
                       const std::string& what) {
  ASSERT_EQ(actual.values.size(), expected.size()) << what;
  int misses = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double tolerance = atol + rtol * std::fabs(expected[i]);
    const bool same_nan = std::isnan(expected[i]) && std::isnan(actual.values[i]);
    const bool same_inf = std::isinf(expected[i]) && actual.values[i] == expected[i];
    if (!same_nan && !same_inf && !(std::fabs(actual.values[i] - expected[i]) <= tolerance)) {
      if (++misses <= 5) {
        ADD_FAILURE() << what << ": element " << i << " is " << actual.values[i] << ", expected " << expected[i]
                      << " (tolerance " << tolerance << ")";
      }
    }
  }
  EXPECT_EQ(misses, 0) << what << ": " << misses << " of " << expected.size() << " elements differ";
}

// Exact equality, for kernels that only move elements.
inline void expectEqual(const TestTensor& actual, const TestTensor& expected, const std::string& what) {
  EXPECT_EQ(actual.dtype, expected.dtype) << what;
  EXPECT_EQ(actual.dims, expected.dims) << what;
  expectNear(actual, expected.values, 0.0, 0.0, what);
}

inline bool usesKernel(const RunResult& result, const std::string& prefix) {
  for (const std::string& line : result.kernels) {
    if (line.find("-> " + prefix) != std::string::npos) return true;
  }
  return false;
}

// Row-major index helpers for reference loops.
inline std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t d = dims.size(); d-- > 1;) strides[d - 1] = strides[d] * dims[d];
  return strides;
}

inline std::vector<int64_t> unravel(int64_t index, const std::vector<int64_t>& dims) {
  std::vector<int64_t> coords(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    coords[d] = dims[d] ? index % dims[d] : 0;
    index = dims[d] ? index / dims[d] : 0;
  }
  return coords;
}

inline int64_t ravel(const std::vector<int64_t>& coords, const std::vector<int64_t>& dims) {
  int64_t index = 0;
  for (size_t d = 0; d < dims.size(); ++d) index = index * dims[d] + coords[d];
  return index;
}

inline std::string dtypeLabel(DType dtype) { return std::string(dtypeName(dtype)); }

}  // namespace estuary::ge::tensor_test
