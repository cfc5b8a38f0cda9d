#pragma once
// Test harness for the element-wise kernels, on tensor_test_support.h's tensors (doubles
// already rounded to their dtype, so a reference computed in double sees exactly what the
// kernel sees): one node written in the IR text form, shape-inferred, its kernel created
// through the CPU kernel registry and run directly (so that canonicalization cannot remove
// it), optionally in place, with constants, on several threads; and comparisons in units of
// the dtype's precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "estuary/ge/device.h"
#include "estuary/ge/kernel.h"
#include "estuary/ops/schema.h"
#include "estuary/text/parser.h"
#include "estuary/transforms/shape_inference.h"
#include "tensor_test_support.h"

namespace estuary::ge::elementwise_test {

using tensor_test::roundTo;
using tensor_test::roundToF32;
using tensor_test::tensorOf;

inline constexpr DType kFloatDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64};
inline constexpr DType kIntDTypes[] = {DType::I8, DType::I16, DType::I32, DType::I64, DType::U8};
inline constexpr DType kNumericDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,
                                           DType::I16, DType::I32, DType::I64,  DType::U8};
inline constexpr DType kAllDTypes[] = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I8,
                                       DType::I16, DType::I32, DType::I64,  DType::U8,  DType::Bool};

inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

inline bool isFloat(DType dtype) { return isFloatingPoint(dtype); }

// The spacing of the dtype's values near `value` (its ulp), for tolerances.
inline double ulpOf(DType dtype, double value) {
  int bits = 53, min_exponent = -1021;
  if (dtype == DType::F32) bits = 24, min_exponent = -125;
  if (dtype == DType::F16) bits = 11, min_exponent = -13;
  if (dtype == DType::BF16) bits = 8, min_exponent = -125;
  int exponent = 0;
  if (value != 0 && std::isfinite(value)) std::frexp(value, &exponent);
  return std::ldexp(1.0, std::max(exponent, min_exponent) - bits);
}

// --- Tensors -------------------------------------------------------------------------------

// An element-wise test's tensor; dtype Undefined marks an absent optional input.
using Data = tensor_test::TestTensor;

// Deterministic pseudo-random values in [lo, hi] (integers for integer dtypes).
inline Data randomData(DType dtype, std::vector<int64_t> dims, double lo, double hi, uint32_t seed = 1) {
  std::mt19937 generator(seed);
  std::uniform_real_distribution<double> uniform(lo, hi);
  Data data{dtype, std::move(dims), {}};
  for (int64_t i = 0; i < data.count(); ++i) {
    double value = uniform(generator);
    if (dtype == DType::Bool) value = value > (lo + hi) / 2;
    if (!isFloat(dtype) && dtype != DType::Bool) value = std::nearbyint(value);
    data.values.push_back(roundTo(dtype, value));
  }
  return data;
}

inline const Data kAbsent{DType::Undefined, {}, {}};

// --- Running one node ----------------------------------------------------------------------

struct RunOptions : tensor_test::KernelRunOptions {
  size_t num_outputs = 1;
};

using NodeRun = tensor_test::KernelRun;

// `graph @g(...) { %y0, ... = OP(%x0, ...) ATTRIBUTES ... }` for `op` (an op type, optionally
// followed by attributes: `Gelu {approximate = "tanh"}`) on `inputs`, whose Undefined-dtype
// entries are left off ("_").
inline std::string nodeGraphText(const std::string& op, const std::vector<Data>& inputs, size_t num_outputs) {
  std::string op_type = op.substr(0, op.find(' '));
  std::string attributes = op.substr(op_type.size());
  std::ostringstream text;
  text << "graph @g(";
  bool first = true;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].dtype == DType::Undefined) continue;
    text << (first ? "" : ", ") << "%x" << i << ": " << inputs[i].type();
    first = false;
  }
  text << ") {\n  ";
  for (size_t k = 0; k < num_outputs; ++k) text << (k ? ", " : "") << "%y" << k;
  text << " = " << op_type << "(";
  for (size_t i = 0; i < inputs.size(); ++i) {
    text << (i ? ", " : "") << (inputs[i].dtype == DType::Undefined ? "_" : "%x" + std::to_string(i));
  }
  text << ")" << attributes << " : ";
  for (size_t k = 0; k < num_outputs; ++k) text << (k ? ", " : "") << "?[*]";
  text << "\n  return ";
  for (size_t k = 0; k < num_outputs; ++k) text << (k ? ", " : "") << "%y" << k;
  text << "\n}\n";
  return text.str();
}

// Runs `op` (nodeGraphText) on `inputs` with `device`'s kernel, its output types inferred.
// Raises when the device has no kernel for it.
inline NodeRun runNode(const std::string& op, const std::vector<Data>& inputs, const RunOptions& options = {},
                       const Device& device = cpuDevice()) {
  std::unique_ptr<Graph> graph = parseGraph(nodeGraphText(op, inputs, options.num_outputs));
  inferShapes(*graph, OpRegistry::global());
  const Node& node = *graph->nodeList().front();
  std::vector<TensorDesc> out_descs;
  for (size_t k = 0; k < node.numOutputs(); ++k) out_descs.push_back(TensorDesc::of(node.output(k)->type()));
  return tensor_test::runKernel(node, device, inputs, out_descs, options);
}

// --- Checks --------------------------------------------------------------------------------

// Whether `actual` matches `expected` (already rounded to the dtype) within `ulps` of the
// dtype's precision; NaN matches NaN, infinities match exactly. Integers and bools exactly.
inline bool close(DType dtype, double actual, double expected, double ulps) {
  if (std::isnan(expected)) return std::isnan(actual);
  if (std::isinf(expected) || !isFloat(dtype)) return actual == expected;
  return std::fabs(actual - expected) <= ulps * ulpOf(dtype, expected);
}

// Checks every element; reports the first few mismatches with the inputs that produced them.
inline void expectClose(const Data& actual, const std::vector<double>& expected, double ulps, const std::string& label,
                        const std::vector<const Data*>& inputs = {}) {
  ASSERT_EQ(actual.values.size(), expected.size()) << label;
  int reported = 0;
  for (size_t i = 0; i < expected.size(); ++i) {
    double want = roundTo(actual.dtype, expected[i]);
    if (close(actual.dtype, actual.values[i], want, ulps)) continue;
    std::ostringstream where;
    where.precision(17);
    for (const Data* input : inputs) {
      if (input->count() == static_cast<int64_t>(expected.size())) where << " x=" << input->values[i];
    }
    ADD_FAILURE() << label << " " << actual.type() << " element " << i << ":" << where.str() << " got "
                  << actual.values[i] << ", expected " << want << " (" << expected[i] << ")";
    if (++reported == 5) return;
  }
}

// Row-major broadcasting reference: the index into `input` of output element `i`.
inline int64_t broadcastIndex(const std::vector<int64_t>& out_dims, const std::vector<int64_t>& in_dims, int64_t i) {
  int64_t index = 0, stride = 1;
  for (size_t d = out_dims.size(); d-- > 0;) {
    int64_t coordinate = i % out_dims[d];
    i /= out_dims[d];
    size_t offset = out_dims.size() - in_dims.size();
    if (d >= offset) {
      int64_t size = in_dims[d - offset];
      if (size != 1) index += coordinate * stride;
      stride *= size;
    }
  }
  return index;
}

}  // namespace estuary::ge::elementwise_test
