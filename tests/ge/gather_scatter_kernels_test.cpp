// Gather, GatherElements, GatherND, ScatterElements, ScatterND and OneHot: every dtype,
// negative indices, bad indices (an Error naming the node), every scatter reduction.
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

TestTensor ints(DType dtype, std::vector<int64_t> dims, std::vector<double> values) {
  return tensorOf(dtype, std::move(dims), std::move(values));
}

int64_t wrap(double index, int64_t n) { return index < 0 ? static_cast<int64_t>(index) + n : static_cast<int64_t>(index); }

// ---- Gather ----------------------------------------------------------------------------------

TestTensor gatherRef(const TestTensor& data, const TestTensor& indices, int axis) {
  std::vector<int64_t> dims(data.dims.begin(), data.dims.begin() + axis);
  dims.insert(dims.end(), indices.dims.begin(), indices.dims.end());
  dims.insert(dims.end(), data.dims.begin() + axis + 1, data.dims.end());
  TestTensor out{data.dtype, dims, {}};
  const size_t q = indices.dims.size();
  for (int64_t i = 0; i < out.count(); ++i) {
    std::vector<int64_t> coords = unravel(i, dims);
    std::vector<int64_t> index_coords(coords.begin() + axis, coords.begin() + axis + static_cast<std::ptrdiff_t>(q));
    std::vector<int64_t> from(coords.begin(), coords.begin() + axis);
    from.push_back(wrap(indices.values[ravel(index_coords, indices.dims)], data.dims[axis]));
    from.insert(from.end(), coords.begin() + axis + static_cast<std::ptrdiff_t>(q), coords.end());
    out.values.push_back(data.values[ravel(from, data.dims)]);
  }
  return out;
}

TEST(GatherKernels, EveryAxisDTypeAndIndexType) {
  for (DType dtype : kEveryDType) {
    for (DType index_type : {DType::I64, DType::I32}) {
      TestTensor data = sampleTensor(dtype, {4, 5, 3}, 1);
      for (int axis = 0; axis < 3; ++axis) {
        TestTensor indices = ints(index_type, {2, 2}, {0, -1, 2, 1});
        std::string body = "  %y = Gather(%data, %indices) {axis = " + std::to_string(axis) + "}\n";
        RunResult result = runGraph(graphText({{"data", &data}, {"indices", &indices}}, body, "%y"), {data, indices});
        expectEqual(result.outputs[0], gatherRef(data, indices, axis),
                    dtypeLabel(dtype) + "/" + dtypeLabel(index_type) + " axis " + std::to_string(axis));
        EXPECT_TRUE(usesKernel(result, "cpu:gather"));
      }
    }
  }
}

TEST(GatherKernels, EmbeddingLookupAndScalarIndex) {
  TestTensor table = randomTensor(DType::F32, {1000, 64}, 2);
  TestTensor ids{DType::I64, {3, 100}, {}};
  for (int i = 0; i < 300; ++i) ids.values.push_back((i * 37) % 1000 - (i % 3 == 0 ? 1000 : 0));
  RunResult result = runGraph(graphText({{"t", &table}, {"ids", &ids}}, "  %y = Gather(%t, %ids)\n", "%y"), {table, ids});
  expectEqual(result.outputs[0], gatherRef(table, ids, 0), "embedding");

  TestTensor scalar = ints(DType::I64, {}, {-2});
  TestTensor data = sampleTensor(DType::I16, {3, 4}, 3);
  result = runGraph(graphText({{"d", &data}, {"i", &scalar}}, "  %y = Gather(%d, %i) {axis = 1}\n", "%y"), {data, scalar});
  expectEqual(result.outputs[0], gatherRef(data, scalar, 1), "scalar index");
}

TEST(GatherKernels, OutOfRangeIndicesRaiseNamingTheNode) {
  TestTensor data = sampleTensor(DType::F32, {5, 2}, 4);
  for (double bad : {5.0, -6.0}) {
    TestTensor indices = ints(DType::I64, {3}, {0, bad, 1});
    std::string message = errorOf(graphText({{"d", &data}, {"i", &indices}}, "  %y = Gather(%d, %i)\n", "%y"), {data, indices});
    EXPECT_NE(message.find("(Gather): index " + std::to_string(static_cast<int64_t>(bad)) +
                           " is out of range for the gathered axis of size 5 (valid: [-5, 4])"),
              std::string::npos)
        << message;
  }
}

// ---- GatherElements --------------------------------------------------------------------------

TEST(GatherElementsKernels, EveryAxisWithNegativeIndicesAndSmallerIndexShapes) {
  for (DType dtype : {DType::F32, DType::BF16, DType::I8, DType::Bool, DType::F64}) {
    TestTensor data = sampleTensor(dtype, {3, 4, 5}, 5);
    for (int axis = 0; axis < 3; ++axis) {
      std::vector<int64_t> dims = {2, 3, 4};
      dims[axis] = 6;  // the indexed axis may be longer than the data's
      TestTensor indices{DType::I32, dims, {}};
      for (int64_t i = 0; i < indices.count(); ++i) {
        int64_t n = data.dims[axis];
        indices.values.push_back(static_cast<double>((i * 7) % (2 * n) - n));  // [-n, n)
      }
      std::string body = "  %y = GatherElements(%d, %i) {axis = " + std::to_string(axis - 3) + "}\n";
      RunResult result = runGraph(graphText({{"d", &data}, {"i", &indices}}, body, "%y"), {data, indices});
      TestTensor expected{dtype, dims, {}};
      for (int64_t i = 0; i < expected.count(); ++i) {
        std::vector<int64_t> coords = unravel(i, dims);
        coords[axis] = wrap(indices.values[i], data.dims[axis]);
        expected.values.push_back(data.values[ravel(coords, data.dims)]);
      }
      expectEqual(result.outputs[0], expected, dtypeLabel(dtype) + " axis " + std::to_string(axis));
    }
  }
}

TEST(GatherElementsKernels, OutOfRangeIndexRaises) {
  TestTensor data = sampleTensor(DType::F32, {2, 3}, 6);
  TestTensor indices = ints(DType::I64, {2, 2}, {0, 1, 3, 0});
  std::string message = errorOf(
      graphText({{"d", &data}, {"i", &indices}}, "  %y = GatherElements(%d, %i) {axis = 1}\n", "%y"), {data, indices});
  EXPECT_NE(message.find("(GatherElements): index 3 is out of range for the indexed axis of size 3"), std::string::npos)
      << message;
}

// ---- GatherND --------------------------------------------------------------------------------

TEST(GatherNdKernels, TuplesSlicesAndBatchDims) {
  struct Case {
    std::vector<int64_t> data, indices;
    int batch_dims;
  };
  const Case cases[] = {
      {{4, 5, 6}, {3, 2}, 0},     // pairs address rows of 6
      {{4, 5, 6}, {2, 2, 3}, 0},  // full tuples address elements
      {{4, 5, 6}, {7, 1}, 0},     // single axis
      {{4, 5, 6}, {4, 3, 1}, 1},  // batch_dims = 1
      {{2, 3, 4, 5}, {2, 3, 2, 1}, 2},
  };
  for (DType dtype : {DType::F32, DType::U8, DType::I64}) {
    for (const Case& c : cases) {
      TestTensor data = sampleTensor(dtype, c.data, 7);
      TestTensor indices{DType::I64, c.indices, {}};
      const int64_t depth = c.indices.back();
      for (int64_t i = 0; i < indices.count(); ++i) {
        int64_t n = c.data[c.batch_dims + i % depth];
        indices.values.push_back(static_cast<double>((i * 5 + 1) % (2 * n) - n));
      }
      std::string body = "  %y = GatherND(%d, %i) {batch_dims = " + std::to_string(c.batch_dims) + "}\n";
      RunResult result = runGraph(graphText({{"d", &data}, {"i", &indices}}, body, "%y"), {data, indices});
      std::vector<int64_t> dims(c.indices.begin(), c.indices.end() - 1);
      dims.insert(dims.end(), c.data.begin() + c.batch_dims + depth, c.data.end());
      TestTensor expected{dtype, dims, {}};
      const size_t tuple_rank = c.indices.size() - 1;
      for (int64_t i = 0; i < expected.count(); ++i) {
        std::vector<int64_t> coords = unravel(i, dims);
        std::vector<int64_t> from(coords.begin(), coords.begin() + c.batch_dims);
        std::vector<int64_t> index_coords(coords.begin(), coords.begin() + static_cast<std::ptrdiff_t>(tuple_rank));
        index_coords.push_back(0);
        for (int64_t j = 0; j < depth; ++j) {
          index_coords.back() = j;
          from.push_back(wrap(indices.values[ravel(index_coords, c.indices)], c.data[c.batch_dims + j]));
        }
        from.insert(from.end(), coords.begin() + static_cast<std::ptrdiff_t>(tuple_rank), coords.end());
        expected.values.push_back(data.values[ravel(from, c.data)]);
      }
      expectEqual(result.outputs[0], expected, dtypeLabel(dtype) + " " + data.type() + " by " + indices.type());
    }
  }
}

TEST(GatherNdKernels, OutOfRangeTupleRaises) {
  TestTensor data = sampleTensor(DType::F32, {4, 5}, 8);
  TestTensor indices = ints(DType::I64, {2, 2}, {1, 1, 2, -6});
  std::string message = errorOf(graphText({{"d", &data}, {"i", &indices}}, "  %y = GatherND(%d, %i)\n", "%y"), {data, indices});
  EXPECT_NE(message.find("(GatherND): index -6 is out of range for an indexed axis of size 5"), std::string::npos)
      << message;
}

// ---- Scatter ---------------------------------------------------------------------------------

double combineRef(const std::string& reduction, DType dtype, double target, double update) {
  if (dtype == DType::Bool) {
    if (reduction == "add" || reduction == "max") return (target != 0 || update != 0) ? 1 : 0;
    if (reduction == "mul" || reduction == "min") return (target != 0 && update != 0) ? 1 : 0;
    return update;
  }
  if (reduction == "add") return roundTo(dtype, target + update);
  if (reduction == "mul") return roundTo(dtype, target * update);
  if (reduction == "max") return std::max(target, update);
  if (reduction == "min") return std::min(target, update);
  return update;
}

TEST(ScatterElementsKernels, EveryReductionWithRepeatedIndices) {
  for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
    for (DType dtype : {DType::F32, DType::F16, DType::I32, DType::Bool, DType::U8}) {
      for (int axis = 0; axis < 2; ++axis) {
        TestTensor data = sampleTensor(dtype, {4, 6}, 9);
        std::vector<int64_t> dims = {3, 5};
        TestTensor indices{DType::I64, dims, {}};
        for (int64_t i = 0; i < indices.count(); ++i) {
          int64_t n = data.dims[axis];
          // With reduction none repeats would make the result order-dependent.
          int64_t index = std::string(reduction) == "none" ? (axis == 0 ? i / 5 : i % 5) : (i * 3) % n;
          indices.values.push_back(static_cast<double>(i % 2 ? index - n : index));
        }
        TestTensor updates = sampleTensor(dtype, dims, 10);
        std::string body = "  %y = ScatterElements(%d, %i, %u) {axis = " + std::to_string(axis) + ", reduction = \"" +
                           reduction + "\"}\n";
        RunResult result = runGraph(graphText({{"d", &data}, {"i", &indices}, {"u", &updates}}, body, "%y"),
                                    {data, indices, updates});
        TestTensor expected = data;
        for (int64_t i = 0; i < indices.count(); ++i) {
          std::vector<int64_t> coords = unravel(i, dims);
          coords[axis] = wrap(indices.values[i], data.dims[axis]);
          double& target = expected.values[ravel(coords, data.dims)];
          target = combineRef(reduction, dtype, target, updates.values[i]);
        }
        expectEqual(result.outputs[0], expected, std::string(reduction) + " " + dtypeLabel(dtype) + " axis " + std::to_string(axis));
      }
    }
  }
}

TEST(ScatterElementsKernels, WritesInPlaceOverAnIntermediate) {
  // The data operand is an intermediate nothing else reads, so the planner gives the
  // output its buffer and the kernel skips the copy.
  TestTensor x = sampleTensor(DType::F32, {3, 4}, 11);
  TestTensor indices = ints(DType::I64, {4, 1}, {2, 0, 1, 2});
  TestTensor updates = sampleTensor(DType::F32, {4, 1}, 12);
  std::string body = "  %t = Transpose(%x) {perm = [1, 0]}\n  %y = ScatterElements(%t, %i, %u) {axis = 1}\n";
  RunResult result = runGraph(graphText({{"x", &x}, {"i", &indices}, {"u", &updates}}, body, "%y"), {x, indices, updates});
  TestTensor expected{DType::F32, {4, 3}, std::vector<double>(12)};
  for (int64_t r = 0; r < 4; ++r) {
    for (int64_t c = 0; c < 3; ++c) expected.values[r * 3 + c] = x.values[c * 4 + r];
    expected.values[r * 3 + static_cast<int64_t>(indices.values[r])] = updates.values[r];
  }
  expectEqual(result.outputs[0], expected, "scatter over a transpose");
}

TEST(ScatterNdKernels, SlicesElementsAndRepeatedTuples) {
  for (const char* reduction : {"none", "add", "mul", "max", "min"}) {
    for (DType dtype : {DType::F32, DType::I64, DType::Bool}) {
      TestTensor data = sampleTensor(dtype, {4, 3, 2}, 13);
      // Rows: tuples of depth 1 address [3, 2] slices; repeated only when reducing.
      bool repeats = std::string(reduction) != "none";
      TestTensor indices = ints(DType::I64, {3, 1}, {1, repeats ? -3.0 : -1.0, 0});
      TestTensor updates = sampleTensor(dtype, {3, 3, 2}, 14);
      std::string body = std::string("  %y = ScatterND(%d, %i, %u) {reduction = \"") + reduction + "\"}\n";
      RunResult result = runGraph(graphText({{"d", &data}, {"i", &indices}, {"u", &updates}}, body, "%y"),
                                  {data, indices, updates});
      TestTensor expected = data;
      for (int64_t t = 0; t < 3; ++t) {
        int64_t row = wrap(indices.values[t], 4);
        for (int64_t k = 0; k < 6; ++k) {
          double& target = expected.values[row * 6 + k];
          target = combineRef(reduction, dtype, target, updates.values[t * 6 + k]);
        }
      }
      expectEqual(result.outputs[0], expected, std::string(reduction) + " " + dtypeLabel(dtype));
    }
  }
  // Full tuples address single elements.
  TestTensor data = sampleTensor(DType::F64, {3, 3}, 15);
  TestTensor indices = ints(DType::I64, {2, 2}, {0, 2, -1, 0});
  TestTensor updates = tensorOf(DType::F64, {2}, {100, 200});
  RunResult result = runGraph(graphText({{"d", &data}, {"i", &indices}, {"u", &updates}}, "  %y = ScatterND(%d, %i, %u)\n", "%y"),
                              {data, indices, updates});
  TestTensor expected = data;
  expected.values[2] = 100;
  expected.values[6] = 200;
  expectEqual(result.outputs[0], expected, "elements");
}

TEST(ScatterNdKernels, OutOfRangeTupleRaises) {
  TestTensor data = sampleTensor(DType::F32, {4, 3}, 16);
  TestTensor indices = ints(DType::I64, {1, 1}, {4});
  TestTensor updates = sampleTensor(DType::F32, {1, 3}, 17);
  std::string message = errorOf(graphText({{"d", &data}, {"i", &indices}, {"u", &updates}}, "  %y = ScatterND(%d, %i, %u)\n", "%y"),
                                {data, indices, updates});
  EXPECT_NE(message.find("(ScatterND): index 4 is out of range for an indexed axis of size 4 (valid: [-4, 3])"),
            std::string::npos)
      << message;
}

// ---- OneHot ----------------------------------------------------------------------------------

TEST(OneHotKernels, AxesNegativeAndOutOfRangeIndices) {
  for (DType index_type : {DType::I64, DType::F32, DType::I8}) {
    for (int axis : {-1, 0, 1}) {
      TestTensor indices = tensorOf(index_type, {2, 3}, {0, 4, -1, -5, 7, 2});
      TestTensor depth = tensorOf(DType::I64, {}, {5});
      TestTensor values = tensorOf(DType::F16, {2}, {-1, 3});
      std::string body = constantLine("depth", depth) + constantLine("values", values) +
                         "  %y = OneHot(%i, %depth, %values) {axis = " + std::to_string(axis) + "}\n";
      RunResult result = runGraph(graphText({{"i", &indices}}, body, "%y"), {indices});
      int position = axis < 0 ? 2 : axis;
      std::vector<int64_t> dims = {2, 3};
      dims.insert(dims.begin() + position, 5);
      TestTensor expected{DType::F16, dims, {}};
      for (int64_t i = 0; i < expected.count(); ++i) {
        std::vector<int64_t> coords = unravel(i, dims);
        int64_t d = coords[position];
        coords.erase(coords.begin() + position);
        int64_t index = static_cast<int64_t>(indices.values[ravel(coords, {2, 3})]);
        if (index < 0) index += 5;
        expected.values.push_back(index == d ? 3 : -1);
      }
      expectEqual(result.outputs[0], expected, dtypeLabel(index_type) + " axis " + std::to_string(axis));
    }
  }
}

}  // namespace
}  // namespace estuary::ge::tensor_test
