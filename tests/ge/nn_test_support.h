#pragma once
// Test harness for the neural-network kernels: tensors held as doubles (already rounded to
// their dtype, so references see exactly what the kernel sees), encoded to any dtype,
// graphs written in the IR text form, and a run through CompiledModel.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/ge/model.h"
#include "estuary/text/parser.h"

namespace estuary::ge::nn_test {

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

inline uint16_t bf16Bits(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

inline double roundTo(DType dtype, double value) {
  switch (dtype) {
    case DType::F32: return static_cast<float>(value);
    case DType::F16: return static_cast<double>(static_cast<_Float16>(value));
    case DType::BF16: {
      uint32_t bits = static_cast<uint32_t>(bf16Bits(static_cast<float>(value))) << 16;
      float result;
      std::memcpy(&result, &bits, 4);
      return result;
    }
    case DType::F64: return value;
    default: return std::nearbyint(value);
  }
}

inline std::vector<std::byte> encode(const TestTensor& tensor) {
  const size_t size = dtypeSize(tensor.dtype);
  std::vector<std::byte> bytes(tensor.values.size() * size);
  for (size_t i = 0; i < tensor.values.size(); ++i) {
    double v = tensor.values[i];
    std::byte* at = bytes.data() + i * size;
    auto put = [&](auto typed) { std::memcpy(at, &typed, sizeof typed); };
    switch (tensor.dtype) {
      case DType::F32: put(static_cast<float>(v)); break;
      case DType::F16: put(static_cast<_Float16>(v)); break;
      case DType::BF16: put(bf16Bits(static_cast<float>(v))); break;
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
    case DType::BF16: {
      uint32_t bits = static_cast<uint32_t>(get(uint16_t{})) << 16;
      float result;
      std::memcpy(&result, &bits, 4);
      return result;
    }
    case DType::F64: return get(double{});
    case DType::I8: return get(int8_t{});
    case DType::I16: return get(int16_t{});
    case DType::I32: return get(int32_t{});
    case DType::I64: return static_cast<double>(get(int64_t{}));
    case DType::U8:
    case DType::Bool: return get(uint8_t{});
    default: return NAN;
  }
}

// Seeded random values in [low, high], rounded to the dtype (integers: whole numbers).
inline TestTensor randomTensor(DType dtype, std::vector<int64_t> dims, uint32_t seed, double low = -1.0,
                               double high = 1.0) {
  TestTensor tensor{dtype, std::move(dims), {}};
  std::mt19937 random(seed);
  std::uniform_real_distribution<double> uniform(low, high);
  tensor.values.resize(static_cast<size_t>(tensor.count()));
  for (double& v : tensor.values) v = roundTo(dtype, uniform(random));
  return tensor;
}

// `%name = Constant() {value = tensor<...> 0x...} : type` for a graph body.
inline std::string constantLine(const std::string& name, const TestTensor& tensor) {
  std::vector<std::byte> bytes = encode(tensor);
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

struct RunResult {
  std::vector<TestTensor> outputs;
  std::vector<std::string> kernels;  // the build report's kernel lines
};

// Builds `graph_text` and runs it once on `inputs` (graph input order).
inline RunResult runGraph(const std::string& graph_text, const std::vector<TestTensor>& inputs, int threads = 2) {
  auto graph = parseGraph(graph_text);
  BuildOptions options;
  options.num_threads = threads;
  auto model = CompiledModel::build(*graph, options);
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

// Relative tolerance of one rounding to the dtype, with a margin for f32 accumulation.
inline double dtypeTolerance(DType dtype) {
  switch (dtype) {
    case DType::F32: return 2e-5;
    case DType::F16: return 2e-3;   // 11-bit significand: half an ulp is 2^-11 ~ 4.9e-4, plus the f16 inputs
    case DType::BF16: return 1e-2;  // 8-bit significand: half an ulp is 2^-8 ~ 3.9e-3
    case DType::F64: return 1e-12;
    default: return 0.0;
  }
}

// Every value within atol + rtol * |expected|; reports the first few misses.
inline void expectNear(const TestTensor& actual, const std::vector<double>& expected, double rtol, double atol,
                       const std::string& what) {
  ASSERT_EQ(actual.values.size(), expected.size()) << what;
  int misses = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double tolerance = atol + rtol * std::fabs(expected[i]);
    const bool same_nan = std::isnan(expected[i]) && std::isnan(actual.values[i]);
    const bool same_infinity = std::isinf(expected[i]) && actual.values[i] == expected[i];
    if (!same_nan && !same_infinity && !(std::fabs(actual.values[i] - expected[i]) <= tolerance)) {
      if (++misses <= 5) {
        ADD_FAILURE() << what << ": element " << i << " is " << actual.values[i] << ", expected " << expected[i]
                      << " (tolerance " << tolerance << ")";
      }
    }
  }
  EXPECT_EQ(misses, 0) << what << ": " << misses << " of " << expected.size() << " elements differ";
}

inline bool usesKernel(const RunResult& result, const std::string& prefix) {
  for (const std::string& line : result.kernels) {
    if (line.find("-> " + prefix) != std::string::npos) return true;
  }
  return false;
}

}  // namespace estuary::ge::nn_test
