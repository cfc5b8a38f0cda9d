// Matrix products (MatMul, Gemm, Einsum), convolutions and pooling.
#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

#include "ops/common.h"
#include "ops/register.h"

namespace estuary {
namespace {

std::string formatInts(const std::vector<int64_t>& values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i) text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

void inferMatMul(InferenceContext& context) {
  const Shape& a = context.inputShape(0);
  const Shape& b = context.inputShape(1);
  if (!a.isRanked() || !b.isRanked()) return;
  if (a.rank() == 0 || b.rank() == 0) {
    context.fail("MatMul needs inputs of rank 1 or more, got A ", a.str(), " and B ", b.str());
  }
  // numpy semantics: a 1-D A is a row [1,K], a 1-D B a column [K,1]; the added axis is
  // dropped from the result.
  std::vector<Dim> left = a.dims();
  std::vector<Dim> right = b.dims();
  if (a.rank() == 1) left.insert(left.begin(), Dim(1));
  if (b.rank() == 1) right.push_back(Dim(1));
  const Dim& k_left = left.back();
  const Dim& k_right = right[right.size() - 2];
  if (k_left.isStatic() && k_right.isStatic() && k_left.value() != k_right.value()) {
    context.fail("inner dimensions differ: A ", a.str(), " has K=", k_left.value(), ", B ",
                 b.str(), " has K=", k_right.value());
  }
  Shape batch = broadcastShapes(
      context, {Shape(std::vector<Dim>(left.begin(), left.end() - 2)),
                Shape(std::vector<Dim>(right.begin(), right.end() - 2))});
  std::vector<Dim> dims = batch.dims();
  if (a.rank() > 1) dims.push_back(left[left.size() - 2]);
  if (b.rank() > 1) dims.push_back(right.back());
  context.setOutputShape(0, Shape(std::move(dims)));
}

void inferGemm(InferenceContext& context) {
  checkRank(context, 0, 2, 2);
  checkRank(context, 1, 2, 2);
  const Shape& a = context.inputShape(0);
  const Shape& b = context.inputShape(1);
  bool trans_a = context.intAttr("transA") != 0;
  bool trans_b = context.intAttr("transB") != 0;
  Dim m = a.isRanked() ? a[trans_a ? 1 : 0] : Dim();
  Dim n = b.isRanked() ? b[trans_b ? 0 : 1] : Dim();
  if (a.isRanked() && b.isRanked()) {
    const Dim& k_a = a[trans_a ? 0 : 1];
    const Dim& k_b = b[trans_b ? 1 : 0];
    if (k_a.isStatic() && k_b.isStatic() && k_a.value() != k_b.value()) {
      context.fail("inner dimensions differ: A ", a.str(), (trans_a ? " (transposed)" : ""),
                   " has K=", k_a.value(), ", B ", b.str(), (trans_b ? " (transposed)" : ""),
                   " has K=", k_b.value());
    }
  }
  Shape result({m, n});
  if (context.hasInput(2)) {
    Shape both = broadcastShapes(context, {result, context.inputShape(2)});
    if (both.isRanked() && both.rank() != 2) {
      context.fail("C ", context.inputShape(2).str(), " does not broadcast to [M,N] ", result.str());
    }
  }
  context.setOutputShape(0, std::move(result));
}

// Einsum with numpy semantics: a label names one size wherever it appears, "..." stands
// for broadcast leading axes, and without "->" the output is the broadcast axes followed
// by the labels used once, in alphabetical order.
void inferEinsum(InferenceContext& context) {
  std::string equation;
  for (char c : context.stringAttr("equation")) {
    if (c != ' ') equation += c;
  }
  size_t arrow = equation.find("->");
  std::string inputs_part = equation.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = inputs_part.find(',', start);
    terms.push_back(inputs_part.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != context.numInputs()) {
    context.fail("equation '", equation, "' has ", terms.size(), " operands but the node has ",
                 context.numInputs(), " inputs");
  }
  std::map<char, Dim> sizes;
  std::map<char, int> uses;
  std::vector<Shape> ellipses;
  bool any_unranked = false;
  for (size_t i = 0; i < terms.size(); ++i) {
    const std::string& term = terms[i];
    size_t dots = term.find("...");
    std::string labels = dots == std::string::npos ? term : term.substr(0, dots) + term.substr(dots + 3);
    for (char label : labels) {
      if (!std::isalpha(static_cast<unsigned char>(label))) {
        context.fail("equation '", equation, "' has an invalid label '", label, "'");
      }
      ++uses[label];
    }
    const Shape& shape = context.inputShape(i);
    if (!shape.isRanked()) {
      any_unranked = true;
      continue;
    }
    if (shape.rank() < labels.size() || (dots == std::string::npos && shape.rank() != labels.size())) {
      context.fail("operand ", i, " '", term, "' does not match the rank of input ", i, " ",
                   shape.str());
    }
    size_t broadcast = shape.rank() - labels.size();
    size_t axis = 0;
    for (size_t k = 0; k < term.size(); ++k) {
      if (dots != std::string::npos && k == dots) {
        ellipses.push_back(Shape(std::vector<Dim>(shape.dims().begin() + axis,
                                                  shape.dims().begin() + axis + broadcast)));
        axis += broadcast;
        k += 2;
        continue;
      }
      auto [it, inserted] = sizes.emplace(term[k], shape[axis]);
      if (!inserted) {
        it->second = unifyDims(context, it->second, shape[axis],
                               std::string("sizes of label '") + term[k] + "'");
      }
      ++axis;
    }
  }
  bool uses_ellipsis = inputs_part.find("...") != std::string::npos;
  std::string output;
  if (arrow != std::string::npos) {
    output = equation.substr(arrow + 2);
  } else {
    output = uses_ellipsis ? "..." : "";
    for (const auto& [label, count] : uses) {
      if (count == 1) output += label;
    }
  }
  std::vector<Dim> dims;
  for (size_t k = 0; k < output.size(); ++k) {
    if (output.compare(k, 3, "...") == 0) {
      if (any_unranked) return;
      Shape broadcast = broadcastShapes(context, ellipses);
      dims.insert(dims.end(), broadcast.dims().begin(), broadcast.dims().end());
      k += 2;
      continue;
    }
    if (!uses.count(output[k])) {
      context.fail("equation '", equation, "' outputs label '", output[k],
                   "', which no operand has");
    }
    auto found = sizes.find(output[k]);
    dims.push_back(found == sizes.end() ? Dim::unknown() : found->second);
  }
  context.setOutputShape(0, Shape(std::move(dims)));
}

// The attributes shared by convolution and pooling, checked against the spatial rank.
struct Window {
  std::vector<int64_t> kernel;
  std::vector<int64_t> strides;
  std::vector<int64_t> dilations;
  std::vector<int64_t> pads;  // begins then ends
  std::string auto_pad;
};

std::vector<int64_t> spatialAttr(const InferenceContext& context, std::string_view name,
                                 size_t spatial, int64_t fallback, int64_t minimum) {
  const Attribute* attribute = context.attr(name);
  if (!attribute) return std::vector<int64_t>(spatial, fallback);
  std::vector<int64_t> values = attribute->asInts();
  if (values.size() != spatial) {
    context.fail("attribute '", name, "' has ", values.size(), " values ", formatInts(values),
                 ", expected ", spatial, " (one per spatial axis)");
  }
  for (int64_t value : values) {
    if (value < minimum) {
      context.fail("attribute '", name, "' is ", formatInts(values), ", values must be >= ",
                   minimum);
    }
  }
  return values;
}

// Reads kernel_shape (or `kernel` taken from the weights), strides, dilations, pads and
// auto_pad.
void readWindow(const InferenceContext& context, size_t spatial, std::vector<int64_t> kernel,
                Window& window) {
  if (const Attribute* kernel_shape = context.attr("kernel_shape")) {
    const std::vector<int64_t>& declared = kernel_shape->asInts();
    if (declared.size() != spatial) {
      context.fail("attribute 'kernel_shape' is ", formatInts(declared), ", expected ", spatial,
                   " values (one per spatial axis)");
    }
    for (size_t i = 0; i < spatial; ++i) {
      if (declared[i] < 1) {
        context.fail("attribute 'kernel_shape' is ", formatInts(declared), ", values must be >= 1");
      }
      if (i < kernel.size() && kernel[i] >= 0 && kernel[i] != declared[i]) {
        context.fail("attribute 'kernel_shape' is ", formatInts(declared),
                     " but the weights have kernel ", formatInts(kernel));
      }
    }
    kernel = declared;
  }
  window.kernel = std::move(kernel);
  window.strides = spatialAttr(context, "strides", spatial, 1, 1);
  window.dilations = spatialAttr(context, "dilations", spatial, 1, 1);
  window.pads = spatialAttr(context, "pads", 2 * spatial, 0, 0);
  window.auto_pad = context.stringAttr("auto_pad");
  if (window.auto_pad != "NOTSET" && window.auto_pad != "SAME_UPPER" &&
      window.auto_pad != "SAME_LOWER" && window.auto_pad != "VALID") {
    context.fail("attribute 'auto_pad' is '", window.auto_pad,
                 "', expected NOTSET, SAME_UPPER, SAME_LOWER or VALID");
  }
  if (window.auto_pad != "NOTSET" && context.node().hasAttr("pads")) {
    context.fail("attributes 'pads' and 'auto_pad' = '", window.auto_pad,
                 "' cannot be used together");
  }
  if (window.auto_pad == "VALID") std::fill(window.pads.begin(), window.pads.end(), 0);
}

// Output size of a sliding window along one axis (ONNX's convolution and pooling rule,
// including the ceil_mode correction that drops a last window starting in the padding).
Dim windowOutput(const InferenceContext& context, const Dim& in, const Window& window, size_t axis,
                 bool ceil_mode) {
  int64_t stride = window.strides[axis];
  if (window.auto_pad == "SAME_UPPER" || window.auto_pad == "SAME_LOWER") {
    if (in.isStatic()) return Dim((in.value() + stride - 1) / stride);
    return stride == 1 ? in : Dim::unknown();
  }
  if (window.kernel[axis] < 0) return Dim::unknown();
  int64_t effective_kernel = (window.kernel[axis] - 1) * window.dilations[axis] + 1;
  int64_t pad_begin = window.pads[axis];
  int64_t pad_end = window.pads[axis + window.kernel.size()];
  if (!in.isStatic()) {
    // Only a unit stride keeps a symbolic size exact: out = in + pads - kernel + 1.
    return stride == 1 ? addOffset(in, pad_begin + pad_end - effective_kernel + 1) : Dim::unknown();
  }
  int64_t span = in.value() + pad_begin + pad_end - effective_kernel;
  if (span < 0) {
    context.fail("spatial axis ", axis, " of size ", in.value(), " with pads ", pad_begin, "+",
                 pad_end, " is smaller than the kernel extent ", effective_kernel);
  }
  int64_t out = (ceil_mode ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil_mode && (out - 1) * stride >= in.value() + pad_begin) --out;
  return Dim(out);
}

// What Conv and ConvTranspose share: X is [N, C, spatial...], W has the rank of X with
// the kernel in its spatial dims, and `group` is positive.
struct ConvWindow {
  size_t spatial;
  Window window;
  int64_t group;
};

// Checks X and W and reads the window attributes; nullopt when neither rank is known.
std::optional<ConvWindow> readConvWindow(InferenceContext& context, const Shape& x,
                                         const Shape& w) {
  if (x.isRanked() && x.rank() < 3) {
    context.fail("input 0 'X' must be [N, C, spatial...], got ", x.str());
  }
  if (w.isRanked() && w.rank() < 3) {
    context.fail("weights W must have a kernel of at least one spatial axis, got ", w.str());
  }
  if (x.isRanked() && w.isRanked() && w.rank() != x.rank()) {
    context.fail("weights W ", w.str(), " must have the rank of X ", x.str());
  }
  const Shape& ranked = x.isRanked() ? x : w;
  if (!ranked.isRanked()) return std::nullopt;
  ConvWindow conv;
  conv.spatial = ranked.rank() - 2;
  std::vector<int64_t> kernel(conv.spatial, -1);
  if (w.isRanked()) {
    for (size_t i = 0; i < conv.spatial; ++i) {
      if (w[2 + i].isStatic()) kernel[i] = w[2 + i].value();
    }
  }
  readWindow(context, conv.spatial, kernel, conv.window);
  conv.group = context.intAttr("group");
  if (conv.group < 1) context.fail("attribute 'group' is ", conv.group, ", must be >= 1");
  return conv;
}

void inferConv(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  const Shape& w = context.inputShape(1);
  std::optional<ConvWindow> conv = readConvWindow(context, x, w);
  if (!conv) return;
  const size_t spatial = conv->spatial;
  const Window& window = conv->window;
  const int64_t group = conv->group;
  Dim channels_out = w.isRanked() ? w[0] : Dim();
  if (channels_out.isStatic() && channels_out.value() % group != 0) {
    context.fail("weights W ", w.str(), " have ", channels_out.value(),
                 " output channels, not divisible by group ", group);
  }
  if (x.isRanked() && w.isRanked() && x[1].isStatic() && w[1].isStatic() &&
      x[1].value() != w[1].value() * group) {
    context.fail("X ", x.str(), " has ", x[1].value(), " channels but W ", w.str(), " with group ",
                 group, " expects ", w[1].value() * group);
  }
  if (context.hasInput(2)) {
    checkRank(context, 2, 1, 1);
    const Shape& bias = context.inputShape(2);
    if (bias.isRanked()) unifyDims(context, bias[0], channels_out, "bias size and output channels");
  }
  std::vector<Dim> dims;
  dims.push_back(x.isRanked() ? x[0] : Dim());
  dims.push_back(channels_out);
  for (size_t i = 0; i < spatial; ++i) {
    dims.push_back(x.isRanked() ? windowOutput(context, x[2 + i], window, i, false) : Dim());
  }
  context.setOutputShape(0, Shape(std::move(dims)));
}

void inferConvTranspose(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  const Shape& w = context.inputShape(1);
  std::optional<ConvWindow> conv = readConvWindow(context, x, w);
  if (!conv) return;
  const size_t spatial = conv->spatial;
  const Window& window = conv->window;
  const int64_t group = conv->group;
  if (x.isRanked() && w.isRanked()) unifyDims(context, x[1], w[0], "input channels of X and W");
  Dim channels_out = w.isRanked() ? w[1] * Dim(group) : Dim();
  std::vector<int64_t> output_padding = spatialAttr(context, "output_padding", spatial, 0, 0);
  std::vector<Dim> dims;
  dims.push_back(x.isRanked() ? x[0] : Dim());
  dims.push_back(channels_out);
  if (const Attribute* output_shape = context.attr("output_shape")) {
    const std::vector<int64_t>& sizes = output_shape->asInts();
    if (sizes.size() != spatial) {
      context.fail("attribute 'output_shape' is ", formatInts(sizes), ", expected ", spatial,
                   " values (one per spatial axis)");
    }
    if (std::any_of(sizes.begin(), sizes.end(), [](int64_t size) { return size < 0; })) {
      context.fail("attribute 'output_shape' is ", formatInts(sizes), ", sizes must be >= 0");
    }
    for (int64_t size : sizes) dims.emplace_back(size);
    context.setOutputShape(0, Shape(std::move(dims)));
    return;
  }
  for (size_t i = 0; i < spatial; ++i) {
    Dim in = x.isRanked() ? x[2 + i] : Dim();
    int64_t stride = window.strides[i];
    if (window.auto_pad == "SAME_UPPER" || window.auto_pad == "SAME_LOWER") {
      dims.push_back(in * Dim(stride));
      continue;
    }
    if (window.kernel[i] < 0) {
      dims.emplace_back();
      continue;
    }
    int64_t effective_kernel = (window.kernel[i] - 1) * window.dilations[i] + 1;
    // out = stride * (in - 1) + output_padding + effective_kernel - pads
    int64_t offset = output_padding[i] + effective_kernel - window.pads[i] -
                     window.pads[i + spatial] - stride;
    if (in.isStatic() && stride * in.value() + offset < 0) {
      context.fail("spatial axis ", i, " of size ", in.value(), " gives a negative output size ",
                   stride * in.value() + offset, " (pads ", window.pads[i], "+",
                   window.pads[i + spatial], " exceed the output)");
    }
    dims.push_back(addOffset(Dim(stride) * in, offset));
  }
  context.setOutputShape(0, Shape(std::move(dims)));
}

void inferPool(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  if (x.rank() < 3) context.fail("input 0 'X' must be [N, C, spatial...], got ", x.str());
  size_t spatial = x.rank() - 2;
  Window window;
  readWindow(context, spatial, std::vector<int64_t>(spatial, -1), window);
  bool ceil_mode = context.intAttr("ceil_mode") != 0;
  std::vector<Dim> dims{x[0], x[1]};
  for (size_t i = 0; i < spatial; ++i) {
    dims.push_back(windowOutput(context, x[2 + i], window, i, ceil_mode));
  }
  Shape result(std::move(dims));
  context.setOutputShape(1, result);  // MaxPool's Indices
  context.setOutputShape(0, std::move(result));
}

void inferGlobalPool(InferenceContext& context) {
  const Shape& x = context.inputShape(0);
  if (!x.isRanked()) return;
  if (x.rank() < 3) context.fail("input 0 'X' must be [N, C, spatial...], got ", x.str());
  std::vector<Dim> dims(x.rank(), Dim(1));
  dims[0] = x[0];
  dims[1] = x[1];
  context.setOutputShape(0, Shape(std::move(dims)));
}

OpSchema& windowAttrs(OpSchema& schema) {
  return schema.attr("auto_pad", AttrKind::String, "NOTSET")
      .attr("dilations", AttrKind::Ints)
      .attr("pads", AttrKind::Ints)
      .attr("strides", AttrKind::Ints);
}

}  // namespace

void registerNnOps(OpRegistry& registry) {
  registry.add(OpSchema("MatMul")
                   .input("A", "T")
                   .input("B", "T")
                   .output("Y", "T")
                   .typeConstraint("T", floatAndWideIntTypes())
                   .inference(inferMatMul));
  registry.add(OpSchema("Gemm")
                   .input("A", "T")
                   .input("B", "T")
                   .input("C", "T", Arity::Optional)
                   .output("Y", "T")
                   .attr("alpha", AttrKind::Float, 1.0)
                   .attr("beta", AttrKind::Float, 1.0)
                   .attr("transA", AttrKind::Int, 0)
                   .attr("transB", AttrKind::Int, 0)
                   .typeConstraint("T", floatAndWideIntTypes())
                   .inference(inferGemm));

  registry.add(OpSchema("Einsum")
                   .input("Inputs", "T", Arity::Variadic)
                   .output("Output", "T")
                   .requiredAttr("equation", AttrKind::String)
                   .typeConstraint("T", numericTypes())
                   .inference(inferEinsum));

  OpSchema conv("Conv");
  conv.input("X", "T").input("W", "T").input("B", "T", Arity::Optional).output("Y", "T");
  windowAttrs(conv).attr("group", AttrKind::Int, 1).attr("kernel_shape", AttrKind::Ints);
  registry.add(conv.typeConstraint("T", floatTypes()).inference(inferConv));

  OpSchema conv_transpose("ConvTranspose");
  conv_transpose.input("X", "T").input("W", "T").input("B", "T", Arity::Optional).output("Y", "T");
  windowAttrs(conv_transpose)
      .attr("group", AttrKind::Int, 1)
      .attr("kernel_shape", AttrKind::Ints)
      .attr("output_padding", AttrKind::Ints)
      .attr("output_shape", AttrKind::Ints);
  registry.add(conv_transpose.typeConstraint("T", floatTypes()).inference(inferConvTranspose));

  OpSchema max_pool("MaxPool");
  max_pool.input("X", "T").output("Y", "T").output("Indices", "i64", Arity::Optional);
  windowAttrs(max_pool)
      .attr("ceil_mode", AttrKind::Int, 0)
      .requiredAttr("kernel_shape", AttrKind::Ints)
      .attr("storage_order", AttrKind::Int, 0);
  std::vector<DType> max_pool_types = floatTypes();
  max_pool_types.push_back(DType::I8);
  max_pool_types.push_back(DType::U8);
  registry.add(max_pool.typeConstraint("T", max_pool_types).inference(inferPool));

  OpSchema average_pool("AveragePool");
  average_pool.input("X", "T").output("Y", "T");
  windowAttrs(average_pool)
      .attr("ceil_mode", AttrKind::Int, 0)
      .attr("count_include_pad", AttrKind::Int, 0)
      .requiredAttr("kernel_shape", AttrKind::Ints);
  registry.add(average_pool.typeConstraint("T", floatTypes()).inference(inferPool));

  for (const char* op : {"GlobalAveragePool", "GlobalMaxPool"}) {
    registry.add(OpSchema(op)
                     .input("X", "T")
                     .output("Y", "T")
                     .typeConstraint("T", floatTypes())
                     .inference(inferGlobalPool));
  }
}

}  // namespace estuary
