// The reference device's Resize: values worked out by hand from the ONNX specification (and
// ONNX's conformance cases), then agreement with the CPU device over every mode,
// coordinate_transformation_mode, nearest_mode and option.
#include <cmath>

#include "estuary/ge/device.h"
#include "tensor_test_support.h"

namespace estuary::ge::tensor_test {
namespace {

std::string operand(const std::string& name, DType dtype, const std::vector<double>& values) {
  return values.empty() ? std::string() : constantLine(name, tensorOf(dtype, {static_cast<int64_t>(values.size())}, values));
}

// A Resize of %x with `scales` or `sizes` (whichever is non-empty), an optional roi and the
// attributes `attrs` ("{...}" or empty).
std::string resizeGraph(const TestTensor& x, const std::vector<double>& scales, const std::vector<double>& sizes,
                        const std::string& attrs, const std::vector<double>& roi = {}) {
  std::string body = operand("roi", DType::F32, roi) + operand("scales", DType::F32, scales) +
                     operand("sizes", DType::I64, sizes);
  const std::string roi_operand = roi.empty() ? "_" : "%roi";
  body += "  %y = Resize(%x, " + roi_operand + (scales.empty() ? ", _, %sizes) " : ", %scales) ") + attrs + "\n";
  return graphText({{"x", &x}}, body, "%y");
}

TestTensor onReference(const std::string& graph, const TestTensor& x) {
  RunResult result = runGraph(graph, {x}, 1, deviceNamed("reference"));
  EXPECT_TRUE(usesKernel(result, "reference:Resize")) << graph;
  return result.outputs[0];
}

TestTensor counting(DType dtype, std::vector<int64_t> dims) {
  TestTensor x{dtype, std::move(dims), {}};
  for (int64_t i = 0; i < x.count(); ++i) x.values.push_back(static_cast<double>(i + 1));
  return x;
}

// ---- By hand --------------------------------------------------------------------------------

TEST(ReferenceResizeHand, NearestUpsample) {
  // ONNX's test_resize_upsample_scales_nearest.
  TestTensor x = counting(DType::F32, {1, 1, 2, 2});
  TestTensor y = onReference(resizeGraph(x, {1, 1, 2, 3}, {}, ""), x);
  EXPECT_EQ(y.dims, (std::vector<int64_t>{1, 1, 4, 6}));
  expectNear(y, {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}, 0, 0, "nearest");
}

// asymmetric at scale 2 puts x_original on the halves 0, 0.5, ..., 3.5, where the nearest
// modes differ.
TEST(ReferenceResizeHand, EveryNearestMode) {
  TestTensor x = tensorOf(DType::I64, {4}, {10, 20, 30, 40});
  const std::pair<const char*, std::vector<double>> cases[] = {
      {"round_prefer_floor", {10, 10, 20, 20, 30, 30, 40, 40}},
      {"round_prefer_ceil", {10, 20, 20, 30, 30, 40, 40, 40}},
      {"floor", {10, 10, 20, 20, 30, 30, 40, 40}},
      {"ceil", {10, 20, 20, 30, 30, 40, 40, 40}}};
  for (const auto& [rounding, expected] : cases) {
    std::string attrs = std::string("{coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"") + rounding + "\"}";
    expectNear(onReference(resizeGraph(x, {2}, {}, attrs), x), expected, 0, 0, rounding);
  }
  // half_pixel at scale 0.5 lands on 0.5 and 2.5.
  expectNear(onReference(resizeGraph(x, {0.5}, {}, "{nearest_mode = \"round_prefer_ceil\"}"), x), {20, 40}, 0, 0,
             "half_pixel ceil ties");
  expectNear(onReference(resizeGraph(x, {0.5}, {}, ""), x), {10, 30}, 0, 0, "half_pixel floor ties");
}

TEST(ReferenceResizeHand, LinearHalfPixelAndAlignCorners) {
  // ONNX's test_resize_upsample_scales_linear.
  TestTensor x = counting(DType::F32, {1, 1, 2, 2});
  expectNear(onReference(resizeGraph(x, {1, 1, 2, 2}, {}, "{mode = \"linear\"}"), x),
             {1, 1.25, 1.75, 2, 1.5, 1.75, 2.25, 2.5, 2.5, 2.75, 3.25, 3.5, 3, 3.25, 3.75, 4}, 1e-7, 0, "upsample");
  // test_resize_downsample_scales_linear: rows at x = 1/3, columns at 1/3 and 2.
  TestTensor wide = counting(DType::F32, {1, 1, 2, 4});
  expectNear(onReference(resizeGraph(wide, {1, 1, 0.6, 0.6}, {}, "{mode = \"linear\"}"), wide), {8.0 / 3, 13.0 / 3},
             1e-6, 0, "downsample");
  // test_resize_downsample_scales_linear_align_corners: the column at 1 * 3 / (4 * 0.6 - 1).
  expectNear(onReference(resizeGraph(wide, {1, 1, 0.6, 0.6}, {},
                                     "{mode = \"linear\", coordinate_transformation_mode = \"align_corners\"}"),
                         wide),
             {1, 1 + 3 / 1.4}, 1e-6, 0, "align_corners");
  // test_resize_downsample_scales_linear_half_pixel_symmetric: offset 2 * (1 - 2 / 2.4) = 1/3
  // moves x_original to 2/3 and 7/3.
  TestTensor row = counting(DType::F64, {1, 1, 1, 4});
  expectNear(onReference(resizeGraph(row, {1, 1, 1, 0.6}, {},
                                     "{mode = \"linear\", coordinate_transformation_mode = \"half_pixel_symmetric\"}"),
                         row),
             {5.0 / 3, 10.0 / 3}, 1e-7, 0, "half_pixel_symmetric");
}

// Keys' cubic with a = -0.75 at x_original = -0.25: taps -2..1 weigh W(1.75) = -0.03515625,
// W(0.75) = 0.26171875, W(0.25) = 0.87890625, W(1.25) = -0.10546875, the taps past the edge
// reading element 0. Data i + 1 makes each value 1 + sum(weight * clamped tap).
TEST(ReferenceResizeHand, CubicUpsample) {
  TestTensor x = counting(DType::F64, {4});
  expectNear(onReference(resizeGraph(x, {2}, {}, "{mode = \"cubic\"}"), x),
             {0.89453125, 1.19140625, 1.66796875, 2.296875, 2.703125, 3.33203125, 3.80859375, 4.10546875}, 1e-12, 0,
             "cubic");
  // exclude_outside drops the taps past the edge and renormalizes: at -0.25 only taps 0 and 1
  // remain, 0.87890625 and -0.10546875.
  TestTensor y = onReference(resizeGraph(x, {2}, {}, "{mode = \"cubic\", exclude_outside = 1}"), x);
  expectNear(TestTensor{y.dtype, {1}, {y.values[0]}}, {(0.87890625 * 1 - 0.10546875 * 2) / (0.87890625 - 0.10546875)},
             1e-12, 0, "exclude_outside");
  // pytorch_half_pixel to a length of 1 reads x_original = 0, as the spec says.
  expectNear(onReference(resizeGraph(x, {}, {1}, "{mode = \"cubic\", coordinate_transformation_mode = \"pytorch_half_pixel\"}"), x),
             {1}, 0, 0, "pytorch_half_pixel to one element");
}

TEST(ReferenceResizeHand, TfCropAndResizeExtrapolates) {
  // roi [0, 1.5] of a length-4 axis sampled at 3 points: x_original 0, 2.25, 4.5 (outside).
  TestTensor x = counting(DType::F32, {4});
  expectNear(onReference(resizeGraph(x, {}, {3},
                                     "{mode = \"linear\", coordinate_transformation_mode = \"tf_crop_and_resize\", "
                                     "extrapolation_value = 10.0}",
                                     {0, 1.5}),
                         x),
             {1, 3.25, 10}, 1e-7, 0, "crop");
}

// ONNX's test_resize_downsample_scales_linear_antialias: the triangle filter stretched to
// width 1 / 0.6 reads taps -1, 0, 1 at x_original 1/3 with weights 0.125, 0.5, 0.375.
TEST(ReferenceResizeHand, AntialiasWidensTheFilter) {
  TestTensor x = counting(DType::F32, {1, 1, 4, 4});
  expectNear(onReference(resizeGraph(x, {1, 1, 0.6, 0.6}, {}, "{mode = \"linear\", antialias = 1}"), x),
             {2.875, 4.5, 9.375, 11}, 1e-6, 0, "antialias");
}

// Integers round to nearest, ties to even (ONNX's reference rounds with np.round), and
// saturate: cubic overshoots the step of [0, 0, 255, 255] below 0 and above 255.
TEST(ReferenceResizeHand, IntegersRoundHalfToEvenAndSaturate) {
  TestTensor x = tensorOf(DType::U8, {2}, {0, 10});
  expectNear(onReference(resizeGraph(x, {2}, {}, "{mode = \"linear\"}"), x), {0, 2, 8, 10}, 0, 0, "2.5 and 7.5");
  TestTensor step = tensorOf(DType::U8, {4}, {0, 0, 255, 255});
  expectNear(onReference(resizeGraph(step, {2}, {}, "{mode = \"cubic\"}"), step), {0, 0, 0, 58, 197, 255, 255, 255}, 0, 0,
             "saturated cubic");
}

TEST(ReferenceResizeHand, AxesAndKeepAspectRatio) {
  TestTensor x = counting(DType::I32, {2, 3});
  TestTensor columns = onReference(
      graphText({{"x", &x}}, operand("scales", DType::F32, {2}) + "  %y = Resize(%x, _, %scales) {axes = [-1]}\n", "%y"), x);
  EXPECT_EQ(columns.dims, (std::vector<int64_t>{2, 6}));
  expectNear(columns, {1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}, 0, 0, "axes");
  // sizes [4, 4]: not_smaller takes the larger ratio 2 for both axes, not_larger the smaller, 4/3.
  TestTensor bigger = onReference(resizeGraph(x, {}, {4, 4}, "{keep_aspect_ratio_policy = \"not_smaller\"}"), x);
  EXPECT_EQ(bigger.dims, (std::vector<int64_t>{4, 6}));
  TestTensor smaller = onReference(resizeGraph(x, {}, {4, 4}, "{keep_aspect_ratio_policy = \"not_larger\"}"), x);
  EXPECT_EQ(smaller.dims, (std::vector<int64_t>{3, 4}));
  // Both axes at (j + 0.5) * 3 / 4 - 0.5 = -0.125, 0.625, 1.375, 2.125: rows 0, 1, 1, columns 0, 1, 1, 2.
  expectNear(smaller, {1, 2, 2, 3, 4, 5, 5, 6, 4, 5, 5, 6}, 0, 0, "not_larger");
}

// ---- Against the CPU device -------------------------------------------------------------------

void expectAgreement(const std::string& graph, const TestTensor& x, double tolerance, const std::string& what) {
  TestTensor reference = onReference(graph, x);
  TestTensor cpu = runGraph(graph, {x}, 1, deviceNamed("cpu")).outputs[0];
  ASSERT_EQ(reference.dims, cpu.dims) << what;
  expectNear(reference, cpu.values, tolerance, tolerance, what);
}

std::string attrs(const std::string& mode, const std::string& coordinates, const std::string& extra = "") {
  return "{mode = \"" + mode + "\", coordinate_transformation_mode = \"" + coordinates + "\"" + extra + "}";
}

const char* const kCoordinateModes[] = {"half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners",
                                        "asymmetric"};

TEST(ReferenceResizeVsCpu, NearestEveryCoordinateAndRoundingMode) {
  for (DType dtype : {DType::F32, DType::F64, DType::I64, DType::U8}) {
    TestTensor x = sampleTensor(dtype, {1, 2, 5, 7}, 31);
    for (const char* coordinates : kCoordinateModes) {
      for (const char* rounding : {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"}) {
        const std::string a = attrs("nearest", coordinates, std::string(", nearest_mode = \"") + rounding + "\"");
        const std::string what = std::string(coordinates) + " " + rounding + " " + x.type();
        expectAgreement(resizeGraph(x, {1, 1, 2, 1.5}, {}, a), x, 0, what + " scales up");
        expectAgreement(resizeGraph(x, {}, {1, 2, 3, 4}, a), x, 0, what + " sizes");
        expectAgreement(resizeGraph(x, {1, 1, 0.6, 0.5}, {}, a), x, 0, what + " scales down");
      }
    }
  }
}

TEST(ReferenceResizeVsCpu, LinearAndCubicEveryCoordinateMode) {
  for (DType dtype : {DType::F32, DType::F64}) {
    TestTensor x = randomTensor(dtype, {2, 3, 6, 5}, 32);
    for (const char* mode : {"linear", "cubic"}) {
      for (const char* coordinates : kCoordinateModes) {
        for (int exclude : {0, 1}) {
          const std::string a = attrs(mode, coordinates, ", exclude_outside = " + std::to_string(exclude));
          const std::string what = std::string(mode) + " " + coordinates + " exclude " + std::to_string(exclude) + " " + x.type();
          expectAgreement(resizeGraph(x, {1, 1, 2, 2}, {}, a), x, 1e-5, what + " scales 2");
          expectAgreement(resizeGraph(x, {1, 1, 1.5, 0.7}, {}, a), x, 1e-5, what + " scales 1.5, 0.7");
          expectAgreement(resizeGraph(x, {}, {2, 3, 4, 9}, a), x, 1e-5, what + " sizes");
          expectAgreement(resizeGraph(x, {}, {2, 3, 1, 1}, a), x, 1e-5, what + " to 1x1");
        }
      }
    }
    TestTensor soft = randomTensor(dtype, {1, 1, 5, 6}, 33);
    expectAgreement(resizeGraph(soft, {1, 1, 1.5, 2.5}, {}, attrs("cubic", "half_pixel", ", cubic_coeff_a = -0.5")), soft,
                    1e-5, "cubic a = -0.5");
  }
}

TEST(ReferenceResizeVsCpu, TfCropAndResize) {
  TestTensor x = randomTensor(DType::F32, {1, 1, 6, 8}, 34);
  for (const char* mode : {"nearest", "linear", "cubic"}) {
    const std::string a = attrs(mode, "tf_crop_and_resize", ", extrapolation_value = -7.0");
    expectAgreement(resizeGraph(x, {}, {1, 1, 5, 9}, a, {0, 0, -0.2, 0.1, 1, 1, 0.8, 1.3}), x, 1e-5,
                    std::string(mode) + " crop past the edges");
    expectAgreement(resizeGraph(x, {}, {1, 1, 1, 4}, a, {0, 0, 0.25, 0.0, 1, 1, 0.75, 1.0}), x, 1e-5,
                    std::string(mode) + " crop to one row");
  }
}

TEST(ReferenceResizeVsCpu, AntialiasedDownsampling) {
  TestTensor x = randomTensor(DType::F64, {1, 2, 16, 13}, 35);
  for (const char* mode : {"linear", "cubic"}) {
    for (const char* coordinates : {"half_pixel", "align_corners", "asymmetric", "half_pixel_symmetric"}) {
      for (int exclude : {0, 1}) {
        const std::string a = attrs(mode, coordinates, ", antialias = 1, exclude_outside = " + std::to_string(exclude));
        const std::string what = std::string(mode) + " " + coordinates + " exclude " + std::to_string(exclude);
        expectAgreement(resizeGraph(x, {1, 1, 0.5, 0.3}, {}, a), x, 1e-9, what + " down");
        expectAgreement(resizeGraph(x, {}, {1, 2, 5, 20}, a), x, 1e-9, what + " down and up");
      }
    }
  }
}

// Interpolated integers: the CPU computes in f32, the reference in double, so a value within
// rounding error of a tie may round either way: within one unit.
TEST(ReferenceResizeVsCpu, IntegerTypes) {
  for (DType dtype : {DType::U8, DType::I8, DType::I32, DType::I64}) {
    TestTensor x = sampleTensor(dtype, {1, 2, 4, 6}, 36);
    for (const char* mode : {"nearest", "linear", "cubic"}) {
      const double tolerance = std::string(mode) == "nearest" ? 0 : 1;
      expectAgreement(resizeGraph(x, {1, 1, 1.5, 2}, {}, attrs(mode, "half_pixel")), x, tolerance,
                      std::string(mode) + " " + x.type());
      expectAgreement(resizeGraph(x, {}, {1, 2, 3, 4}, attrs(mode, "align_corners")), x, tolerance,
                      std::string(mode) + " align_corners " + x.type());
    }
  }
  TestTensor flags = sampleTensor(DType::Bool, {2, 3, 4}, 37);
  expectAgreement(resizeGraph(flags, {1, 2, 0.5}, {}, ""), flags, 0, "bool nearest");
}

TEST(ReferenceResizeVsCpu, AxesAndKeepAspectRatio) {
  TestTensor x = randomTensor(DType::F32, {2, 3, 4, 5}, 38);
  std::string body = operand("scales", DType::F32, {2, 0.5}) +
                     "  %y = Resize(%x, _, %scales) {axes = [-2, 1], mode = \"linear\"}\n";
  expectAgreement(graphText({{"x", &x}}, body, "%y"), x, 1e-5, "axes [-2, 1]");
  for (const char* policy : {"not_larger", "not_smaller"}) {
    std::string sizes_body = operand("sizes", DType::I64, {7, 9}) + "  %y = Resize(%x, _, _, %sizes) {axes = [2, 3], " +
                             "mode = \"cubic\", keep_aspect_ratio_policy = \"" + policy + "\"}\n";
    expectAgreement(graphText({{"x", &x}}, sizes_body, "%y"), x, 1e-5, policy);
  }
}

}  // namespace
}  // namespace estuary::ge::tensor_test
