// If and Loop: subgraphs planned once at build time and run by the node's kernel.
#include <cstdio>

#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

TestTensor scalarOf(DType dtype, double value) { return TestTensor{dtype, {}, {value}}; }

// Refused when built, or, for graphs with small inputs that might carry shapes (which the
// backend then plans by value, see CompiledModel::planFor), at the first run.
void expectRefused(const std::string& text, const std::string& expected) {
  auto graph = parseGraph(text);
  try {
    auto model = CompiledModel::build(*graph);
    std::vector<std::vector<std::byte>> buffers;
    std::vector<HostTensor> inputs;
    for (const IoInfo& input : model->inputs()) {
      TensorDesc desc = TensorDesc::of(input.type);
      buffers.emplace_back(desc.byteSize() + 1);
      inputs.push_back(HostTensor::of(desc, buffers.back().data()));
    }
    model->createContext()->run(inputs);
    ADD_FAILURE() << "ran, expected an error containing: " << expected;
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find(expected), std::string::npos) << error.what();
  }
}

// The branches capture %x and %w (a constant) from the outer graph.
constexpr char kIfGraph[] = R"(graph @g(%c: bool[], %x: f32[2,3]) {
%W  %r = If(%c) {else_branch = graph @else() {
    %m = Mul(%x, %x)
    return %m
  }, then_branch = graph @then() {
    %p = MatMul(%x, %w)
    %a = Add(%p, %x)
    return %a
  }}
  return %r
})";

std::string ifGraph(const TestTensor& w) {
  std::string text = kIfGraph;
  text.replace(text.find("%W"), 2, constantLine("w", w));
  return text;
}

TEST(IfKernel, PicksTheBranchAtRunTimeWithCapturedValuesAndConstants) {
  TestTensor x = randomTensor(DType::F32, {2, 3}, 1), w = randomTensor(DType::F32, {3, 3}, 2);
  for (bool condition : {true, false}) {
    SCOPED_TRACE(condition ? "then" : "else");
    RunResult run = runGraph(ifGraph(w), {scalarOf(DType::Bool, condition), x});
    std::vector<double> expected(6);
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 3; ++j) {
        double dot = 0;
        for (int k = 0; k < 3; ++k) dot += x.values[i * 3 + k] * w.values[k * 3 + j];
        const double xv = x.values[i * 3 + j];
        expected[i * 3 + j] = condition ? dot + xv : xv * xv;
      }
    }
    expectNear(run.outputs.at(0), expected, 1e-6, 1e-6, "If");
    EXPECT_TRUE(usesKernel(run, "cpu:if"));
  }
}

// A condition known from shapes (as in ONNX's function bodies: Size(x) == 5) takes one
// branch; the other, a Split of the 5-vector into 4, is invalid here and is not planned.
// A condition constant at this shape (Size(x) == 4 in ONNX's function bodies) leaves only the
// branch it takes: the other is never planned, as it may not even be valid for these inputs
// (a Split of a 5-vector into 4).
TEST(IfKernel, AConstantConditionLeavesOnlyTheTakenBranch) {
  TestTensor x = randomTensor(DType::F32, {5}, 5);
  RunResult run = runGraph(R"(graph @g(%x: f32[5]) {
  %n = Size(%x)
  %five = Constant() {value = tensor<i64[]> [5]}
  %c = Equal(%n, %five)
  %r = If(%c) {else_branch = graph @else() {
    %a, %b, %d, %e = Split(%x) {num_outputs = 4}
    return %a
  }, then_branch = graph @then() {
    %m = Neg(%x)
    return %m
  }}
  return %r
})",
                           {x});
  std::vector<double> expected;
  for (double v : x.values) expected.push_back(-v);
  expectNear(run.outputs.at(0), expected, 0, 0, "If");
  ASSERT_EQ(run.kernels.size(), 1u);
  EXPECT_NE(run.kernels[0].find("(Neg)"), std::string::npos) << run.kernels[0];
}

TEST(IfKernel, OneCompiledModelRunsBothBranchesFromOneContext) {
  TestTensor x = randomTensor(DType::F32, {2, 3}, 3), w = randomTensor(DType::F32, {3, 3}, 4);
  auto model = CompiledModel::build(*parseGraph(ifGraph(w)));
  auto context = model->createContext();
  std::vector<float> input(x.values.begin(), x.values.end());
  for (int round = 0; round < 4; ++round) {
    uint8_t condition = round % 2;
    const auto& outputs = context->run({HostTensor::of(TensorDesc::of(DType::Bool, {}), &condition),
                                        HostTensor::of(TensorDesc::of(DType::F32, {2, 3}), input.data())});
    const float* y = static_cast<const float*>(outputs[0].data);
    if (!condition) EXPECT_FLOAT_EQ(y[4], input[4] * input[4]);
    else EXPECT_NE(y[4], input[4] * input[4]);
  }
}

// Branches of different shapes: the output's shape depends on the condition, so the
// backend plans by the condition's value (CompiledModel::planFor), one branch per plan.
TEST(IfKernel, BranchesOfDifferentShapesArePlannedPerConditionValue) {
  const std::string text = R"(graph @g(%c: bool[], %x: f32[2,3]) {
  %r = If(%c) {else_branch = graph @else() {
    %t = Transpose(%x) {perm = [1, 0]}
    return %t
  }, then_branch = graph @then() {
    return %x
  }}
  return %r
})";
  TestTensor x = randomTensor(DType::F32, {2, 3}, 6);
  RunResult then_run = runGraph(text, {scalarOf(DType::Bool, 1), x});
  EXPECT_EQ(then_run.outputs.at(0).dims, (std::vector<int64_t>{2, 3}));
  expectNear(then_run.outputs.at(0), x.values, 0, 0, "then");
  RunResult else_run = runGraph(text, {scalarOf(DType::Bool, 0), x});
  EXPECT_EQ(else_run.outputs.at(0).dims, (std::vector<int64_t>{3, 2}));
  std::vector<double> transposed;
  for (int j = 0; j < 3; ++j) {
    for (int i = 0; i < 2; ++i) transposed.push_back(x.values[i * 3 + j]);
  }
  expectNear(else_run.outputs.at(0), transposed, 0, 0, "else");
}

// acc_{t+1} = acc_t * 0.5 + x; the scan output records acc_t + t.
std::string accumulateLoop(const std::string& trip_count_line, const std::string& trip_count) {
  return R"(graph @g(%x: f32[3], %init: f32[3]) {
)" + trip_count_line + "  %final, %scan = Loop(" + trip_count + R"(, _, %init) {
    body = graph @body(%i: i64[], %cond: bool[], %acc: f32[3]) {
    %half = Constant() {value = tensor<f32[]> [0.5]}
    %scaled = Mul(%acc, %half)
    %next = Add(%scaled, %x)
    %t = Cast(%i) {to = f32}
    %seen = Add(%acc, %t)
    return %cond, %next, %seen
  }}
  return %final, %scan
})";
}

TEST(LoopKernel, CarriesValuesAndWritesScanOutputsForAConstantTripCount) {
  TestTensor x = randomTensor(DType::F32, {3}, 5), init = randomTensor(DType::F32, {3}, 6);
  const int64_t trips = 5;
  RunResult run = runGraph(accumulateLoop(constantLine("m", scalarOf(DType::I64, trips)), "%m"), {x, init});
  std::vector<double> acc(init.values), scan;
  for (int64_t t = 0; t < trips; ++t) {
    for (int j = 0; j < 3; ++j) scan.push_back(static_cast<float>(acc[j] + t));
    for (int j = 0; j < 3; ++j) acc[j] = static_cast<float>(static_cast<float>(acc[j] * 0.5) + x.values[j]);
  }
  expectNear(run.outputs.at(0), acc, 1e-6, 1e-6, "final");
  ASSERT_EQ(run.outputs.at(1).dims, (std::vector<int64_t>{trips, 3}));
  expectNear(run.outputs.at(1), scan, 1e-6, 1e-6, "scan");
  EXPECT_TRUE(usesKernel(run, "cpu:loop"));
}

TEST(LoopKernel, ZeroIterationsReturnTheInitialValues) {
  TestTensor x = randomTensor(DType::F32, {3}, 7), init = randomTensor(DType::F32, {3}, 8);
  RunResult run = runGraph(accumulateLoop(constantLine("m", scalarOf(DType::I64, 0)), "%m"), {x, init});
  expectNear(run.outputs.at(0), init.values, 0, 0, "final");
  EXPECT_EQ(run.outputs.at(1).dims, (std::vector<int64_t>{0, 3}));
}

// A while loop: doubles %v until the body's condition (v < limit) fails or M runs out.
constexpr char kWhileLoop[] = R"(graph @g(%m: i64[], %go: bool[], %v: f32[2], %limit: f32[]) {
  %out = Loop(%m, %go, %v) {body = graph @body(%i: i64[], %cond: bool[], %value: f32[2]) {
    %two = Constant() {value = tensor<f32[]> [2.0]}
    %next = Mul(%value, %two)
    %first = Slice(%next, %zero, %one)
    %more = Less(%first, %limit)
    %keep = Squeeze(%more, %zero)
    return %keep, %next
  }}
  return %out
})";

TEST(LoopKernel, StopsWhenTheBodysConditionFailsOrTheTripCountRunsOut) {
  std::string text = kWhileLoop;
  text.insert(text.find("  %out"), constantLine("zero", TestTensor{DType::I64, {1}, {0}}) +
                                       constantLine("one", TestTensor{DType::I64, {1}, {1}}));
  TestTensor v{DType::F32, {2}, {1.0, 3.0}};
  // Doubles until v[0] >= 20: 2, 4, 8, 16, 32 (five iterations).
  RunResult run = runGraph(text, {scalarOf(DType::I64, 100), scalarOf(DType::Bool, 1), v, scalarOf(DType::F32, 20)});
  expectNear(run.outputs.at(0), {32.0, 96.0}, 0, 0, "condition stops");
  run = runGraph(text, {scalarOf(DType::I64, 2), scalarOf(DType::Bool, 1), v, scalarOf(DType::F32, 20)});
  expectNear(run.outputs.at(0), {4.0, 12.0}, 0, 0, "trip count stops");
  run = runGraph(text, {scalarOf(DType::I64, 9), scalarOf(DType::Bool, 0), v, scalarOf(DType::F32, 20)});
  expectNear(run.outputs.at(0), {1.0, 3.0}, 0, 0, "false initial condition");
}

// A Loop whose body holds an If: the If captures the body's carried value and a value of
// the outer graph, two levels up.
constexpr char kNestedGraph[] = R"(graph @g(%x: f32[3], %step: f32[3]) {
  %m = Constant() {value = tensor<i64[]> [4]}
  %two = Constant() {value = tensor<i64[]> [2]}
  %out = Loop(%m, _, %x) {body = graph @body(%i: i64[], %cond: bool[], %acc: f32[3]) {
    %early = Less(%i, %two)
    %next = If(%early) {else_branch = graph @else() {
      %s = Sub(%acc, %step)
      return %s
    }, then_branch = graph @then() {
      %a = Add(%acc, %step)
      %d = Add(%a, %a)
      return %d
    }}
    return %cond, %next
  }}
  return %out
})";

TEST(LoopKernel, ANestedIfCapturesTheBodysAndTheOuterGraphsValues) {
  TestTensor x = randomTensor(DType::F32, {3}, 9), step = randomTensor(DType::F32, {3}, 10);
  RunResult run = runGraph(kNestedGraph, {x, step});
  std::vector<double> acc(x.values);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 3; ++j) {
      acc[j] = i < 2 ? 2.0 * static_cast<float>(acc[j] + step.values[j]) : acc[j] - step.values[j];
      acc[j] = static_cast<float>(acc[j]);
    }
  }
  expectNear(run.outputs.at(0), acc, 1e-6, 1e-6, "nested");
}

TEST(LoopKernel, ControlFlowSurvivesAnOfflineModelRoundTrip) {
  TestTensor x = randomTensor(DType::F32, {3}, 11), step = randomTensor(DType::F32, {3}, 12);
  auto model = CompiledModel::build(*parseGraph(kNestedGraph));
  const std::string file = ::testing::TempDir() + "control_flow_round_trip.eom";
  model->save(file);
  auto loaded = CompiledModel::load(file);
  std::vector<float> xs(x.values.begin(), x.values.end()), steps(step.values.begin(), step.values.end());
  std::vector<HostTensor> inputs{HostTensor::of(TensorDesc::of(DType::F32, {3}), xs.data()),
                                 HostTensor::of(TensorDesc::of(DType::F32, {3}), steps.data())};
  auto expected = model->createContext(), actual = loaded->createContext();
  const float* a = static_cast<const float*>(expected->run(inputs)[0].data);
  const float* b = static_cast<const float*>(actual->run(inputs)[0].data);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(a[j], b[j]) << j;
  std::remove(file.c_str());
}

// Scan outputs of a loop its condition may end early: planned at [M, ...], reported at the
// length each run produced.
constexpr char kEarlyExitScan[] = R"(graph @g(%v: f32[2], %stop: i64[]) {
  %m = Constant() {value = tensor<i64[]> [6]}
  %go = Constant() {value = tensor<bool[]> [true]}
  %out, %scan = Loop(%m, %go, %v) {body = graph @body(%i: i64[], %cond: bool[], %value: f32[2]) {
    %one = Constant() {value = tensor<i64[]> [1]}
    %next_i = Add(%i, %one)
    %keep = Less(%next_i, %stop)
    %twice = Add(%value, %value)
    return %keep, %twice, %value
  }}
  return %out, %scan
})";

TEST(LoopKernel, ScanOutputsOfALoopThatMayEndEarlyHaveARuntimeLength) {
  auto model = CompiledModel::build(*parseGraph(kEarlyExitScan));
  auto context = model->createContext();
  std::vector<float> v{1.f, -3.f};
  for (int64_t stop : {3, 1, 10}) {
    SCOPED_TRACE("stop " + std::to_string(stop));
    HostTensor inputs[] = {HostTensor::of(TensorDesc::of(DType::F32, {2}), v.data()),
                           HostTensor::of(TensorDesc::of(DType::I64, {}), &stop)};
    const auto& outputs = context->run({inputs[0], inputs[1]});
    const int64_t trips = std::min<int64_t>(std::max<int64_t>(stop, 1), 6);  // the body runs at least once
    ASSERT_EQ(outputs[1].desc(), TensorDesc::of(DType::F32, {trips, 2}));
    const float* scan = static_cast<const float*>(outputs[1].data);
    const float* out = static_cast<const float*>(outputs[0].data);
    for (int64_t t = 0; t < trips; ++t) {
      EXPECT_EQ(scan[2 * t], static_cast<float>(1 << t));
      EXPECT_EQ(scan[2 * t + 1], -3.f * static_cast<float>(1 << t));
    }
    EXPECT_EQ(out[0], static_cast<float>(1 << trips));
  }
  int64_t stop = 2;
  EXPECT_EQ(context->outputDescs({HostTensor::of(TensorDesc::of(DType::F32, {2}), v.data()),
                                  HostTensor::of(TensorDesc::of(DType::I64, {}), &stop)})[1],
            TensorDesc::of(DType::F32, {6, 2}));  // the upper bound
}

TEST(LoopKernel, TripCountGivenAtRunTimeIsPlannedByValue) {
  auto graph = parseGraph(R"(graph @g(%v: f32[2], %m: i64[]) {
  %out, %scan = Loop(%m, _, %v) {body = graph @body(%i: i64[], %cond: bool[], %value: f32[2]) {
    %one = Constant() {value = tensor<f32[]> [1.0]}
    %next = Add(%value, %one)
    return %cond, %next, %value
  }}
  return %out, %scan
})");
  auto model = CompiledModel::build(*graph);
  auto context = model->createContext();
  float v[2] = {1.0f, -1.0f};
  for (int64_t m : {3, 1}) {
    const auto& outputs = context->run({HostTensor::of(TensorDesc::of(DType::F32, {2}), v),
                                        HostTensor::of(TensorDesc::of(DType::I64, {}), &m)});
    const float* out = static_cast<const float*>(outputs[0].data);
    EXPECT_EQ(out[0], 1.0f + static_cast<float>(m));
    EXPECT_EQ(outputs[1].desc().dimVector(), (std::vector<int64_t>{m, 2}));
  }
}

// Range's expansion: the trip count is ceil((limit - start) / delta) computed in float from
// inputs planned by value; folding it to a constant lets the loop's scan output be typed.
TEST(LoopKernel, ATripCountComputedInFloatFromShapeInputsIsFoldedFirst) {
  auto graph = parseGraph(R"(graph @g(%start: f32[], %limit: f32[], %delta: f32[]) {
  %span = Sub(%limit, %start)
  %steps = Div(%span, %delta)
  %ceiling = Ceil(%steps)
  %m = Cast(%ceiling) {to = i64}
  %last, %range = Loop(%m, _, %start) {body = graph @body(%i: i64[], %cond: bool[], %previous: f32[]) {
    %next = Add(%previous, %delta)
    return %cond, %next, %previous
  }}
  return %range
})");
  auto model = CompiledModel::build(*graph);
  auto context = model->createContext();
  const TensorDesc scalar = TensorDesc::of(DType::F32, {});
  float start = 1.0f, limit = 6.0f, delta = 2.0f;
  const auto& outputs = context->run(
      {HostTensor::of(scalar, &start), HostTensor::of(scalar, &limit), HostTensor::of(scalar, &delta)});
  ASSERT_EQ(outputs[0].desc().dimVector(), (std::vector<int64_t>{3}));
  const float* range = static_cast<const float*>(outputs[0].data);
  EXPECT_EQ(range[0], 1.0f);
  EXPECT_EQ(range[1], 3.0f);
  EXPECT_EQ(range[2], 5.0f);
}

TEST(LoopKernel, UnsupportedLoopsAreRefusedSayingWhy) {
  // A runtime-length scan output used by another node.
  std::string text = kEarlyExitScan;
  text.replace(text.find("  return %out, %scan"), std::string::npos, "  %n = Neg(%scan)\n  return %out, %n\n}");
  expectRefused(text, "the length of its scan outputs depends on the values computed at run time");
  expectRefused(text, "(Neg) uses it");
  // (Scan outputs whose trip count is an input are planned by the count's value, see
  // LoopKernel.TripCountGivenAtRunTimeIsPlannedByValue.)
  // A carried value that grows every iteration, more often than is unrolled.
  expectRefused(R"(graph @g(%v: f32[2]) {
  %m = Constant() {value = tensor<i64[]> [65]}
  %out = Loop(%m, _, %v) {body = graph @body(%i: i64[], %cond: bool[], %value: f32[?]) {
    %more = Concat(%value, %value) {axis = 0}
    return %cond, %more
  }}
  return %out
})",
                   "carried value 0 enters as f32[2] but one iteration makes it f32[4]");
}

// Types that change with the iteration (ONNX's test_loop11 slices by the iteration number; a
// carried value that doubles) cannot share one body plan: a short loop is unrolled.
TEST(LoopKernel, ALoopWhoseTypesChangeWithTheIterationIsUnrolled) {
  TestTensor x = randomTensor(DType::F32, {4}, 9), v = randomTensor(DType::F32, {1}, 10);
  RunResult run = runGraph(R"(graph @g(%x: f32[4], %v: f32[1]) {
  %m = Constant() {value = tensor<i64[]> [3]}
  %out, %picked = Loop(%m, _, %v) {body = graph @body(%i: i64[], %cond: bool[], %value: f32[?]) {
    %axis = Constant() {value = tensor<i64[1]> [0]}
    %one = Constant() {value = tensor<i64[]> [1]}
    %next_i = Add(%i, %one)
    %start = Unsqueeze(%i, %axis)
    %end = Unsqueeze(%next_i, %axis)
    %element = Slice(%x, %start, %end)
    %more = Concat(%value, %element) {axis = 0}
    return %cond, %more, %element
  }}
  return %out, %picked
})",
                           {x, v});
  EXPECT_EQ(run.outputs.at(0).dims, (std::vector<int64_t>{4}));
  expectNear(run.outputs.at(0), {v.values[0], x.values[0], x.values[1], x.values[2]}, 0, 0, "grown");
  EXPECT_EQ(run.outputs.at(1).dims, (std::vector<int64_t>{3, 1}));
  expectNear(run.outputs.at(1), {x.values[0], x.values[1], x.values[2]}, 0, 0, "scanned");
  for (const std::string& line : run.kernels) EXPECT_EQ(line.find("cpu:loop"), std::string::npos) << line;
}

}  // namespace
}  // namespace estuary::ge::tensor_test
