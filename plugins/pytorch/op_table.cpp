// One translator per ATen op (the overloads aot_autograd leaves in inference graphs), into
// Estuary's ONNX-semantics core ops. Arguments are read by schema position and name, with
// the schema's defaults, since FX drops trailing defaults.
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "fx_translation.h"

namespace estuary::pytorch {
namespace {

using Results = std::vector<Value*>;

// --- Element-wise ----------------------------------------------------------------------

// Both operands in the result's dtype (PyTorch's type promotion, as the fake value records
// it; a Python number becomes a scalar of that dtype). `alpha` scales the second operand of
// the IR op: other for add/sub, self for rsub (other - alpha * self).
Results binary(FxTranslation& t, std::string_view op, bool swap = false) {
  DType dtype = t.resultDType();
  Value* a = t.tensorOrScalar(0, "self", dtype);
  Value* b = t.tensorOrScalar(1, "other", dtype);
  if (swap) std::swap(a, b);
  if (double alpha = t.floatArg(2, "alpha", 1.0); alpha != 1.0) b = t.emitValue("Mul", {b, t.scalar(dtype, alpha)});
  return {t.emitValue(op, {a, b})};
}
Results add(FxTranslation& t) { return binary(t, "Add"); }
Results sub(FxTranslation& t) { return binary(t, "Sub"); }
Results rsub(FxTranslation& t) { return binary(t, "Sub", true); }
Results mul(FxTranslation& t) { return binary(t, "Mul"); }
Results div(FxTranslation& t) {
  if (t.arg(2, "rounding_mode")) t.fail("rounding_mode is not translated");
  return binary(t, "Div");
}

template <const char* Op>
Results unary(FxTranslation& t) {
  return {t.emitValue(Op, {t.tensor(0, "self")})};
}
constexpr char kRelu[] = "Relu", kNeg[] = "Neg", kExp[] = "Exp", kLog[] = "Log", kSqrt[] = "Sqrt",
               kTanh[] = "Tanh", kSigmoid[] = "Sigmoid", kAbs[] = "Abs", kErf[] = "Erf", kSin[] = "Sin",
               kCos[] = "Cos", kIdentity[] = "Identity", kReciprocal[] = "Reciprocal";

Results rsqrt(FxTranslation& t) {
  return {t.emitValue("Reciprocal", {t.emitValue("Sqrt", {t.tensor(0, "self")})})};
}
Results silu(FxTranslation& t) { return {t.emitValue("Swish", {t.tensor(0, "self")}, {{"alpha", 1.0}})}; }
Results hardswish(FxTranslation& t) { return {t.emitValue("HardSwish", {t.tensor(0, "self")})}; }
// relu6(x + 3) / 6: ONNX's HardSigmoid with alpha 1/6, beta 1/2.
Results hardsigmoid(FxTranslation& t) {
  return {t.emitValue("HardSigmoid", {t.tensor(0, "self")}, {{"alpha", 1.0 / 6.0}, {"beta", 0.5}})};
}
Results gelu(FxTranslation& t) {
  std::string approximate = t.stringArg(1, "approximate", "none");
  return {t.emitValue("Gelu", {t.tensor(0, "self")}, {{"approximate", approximate}})};
}
Results hardtanh(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  return {t.emitValue("Clip", {x, t.scalar(x->dtype(), t.floatArg(1, "min_val", -1.0)),
                                t.scalar(x->dtype(), t.floatArg(2, "max_val", 1.0))})};
}
Results powScalar(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  double exponent = t.floatArg(1, "exponent");
  if (exponent == 2.0) return {t.emitValue("Mul", {x, x})};
  return {t.emitValue("Pow", {x, t.scalar(x->dtype(), exponent)})};
}
Results convertElementType(FxTranslation& t) { return {t.cast(t.tensor(0, "a"), t.resultDType())}; }
Results toCopy(FxTranslation& t) { return {t.cast(t.tensor(0, "self"), t.resultDType())}; }
Results where(FxTranslation& t) {
  DType dtype = t.resultDType();
  return {t.emitValue("Where", {t.cast(t.tensor(0, "condition"), DType::Bool), t.tensorOrScalar(1, "self", dtype),
                                t.tensorOrScalar(2, "other", dtype)})};
}
Results maskedFill(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  return {t.emitValue("Where", {t.cast(t.tensor(1, "mask"), DType::Bool), t.tensorOrScalar(2, "value", x->dtype()), x})};
}

// The dtype two operands meet in, as PyTorch promotes them: a float over an integer, the
// wider float, and i64 for integers of two kinds.
DType promoted(DType a, DType b) {
  if (a == b) return a;
  if (isFloatingPoint(a) != isFloatingPoint(b)) return isFloatingPoint(a) ? a : b;
  if (isFloatingPoint(a)) return dtypeSize(a) >= dtypeSize(b) ? (a == DType::BF16 && b == DType::F16 ? DType::F32 : a) : b;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  return DType::I64;
}
// eq, ne, lt, le, gt, ge (.Tensor and .Scalar): the operands in their promoted dtype, a bool result.
Results comparison(FxTranslation& t, std::string_view op, bool negate = false) {
  Value* a = t.tensor(0, "self");
  const FxArg& other = t.requiredArg(1, "other");
  DType dtype = other.isNode() ? promoted(a->dtype(), t.valueOf(other)->dtype()) : a->dtype();
  if (!other.isNode() && other.kind == FxArg::Kind::Float && !isFloatingPoint(dtype)) dtype = DType::F32;
  Value* result = t.emitValue(op, {t.cast(a, dtype), t.tensorOrScalar(1, "other", dtype)});
  return {negate ? t.emitValue("Not", {result}) : result};
}
Results eq(FxTranslation& t) { return comparison(t, "Equal"); }
Results ne(FxTranslation& t) { return comparison(t, "Equal", true); }
Results lt(FxTranslation& t) { return comparison(t, "Less"); }
Results le(FxTranslation& t) { return comparison(t, "LessOrEqual"); }
Results gt(FxTranslation& t) { return comparison(t, "Greater"); }
Results ge(FxTranslation& t) { return comparison(t, "GreaterOrEqual"); }
Results maximum(FxTranslation& t) { return binary(t, "Max"); }
Results minimum(FxTranslation& t) { return binary(t, "Min"); }
// bitwise_and/or/not on bool tensors (masks): the logical ops. Integer bit operations have no
// core op yet.
Results bitwise(FxTranslation& t, std::string_view op) {
  Value* a = t.tensor(0, "self");
  if (a->dtype() != DType::Bool) t.fail("bitwise operations on ", dtypeName(a->dtype()), " are not translated (bool only)");
  if (op == "Not") return {t.emitValue("Not", {a})};
  return {t.emitValue(op, {a, t.cast(t.tensorOrScalar(1, "other", DType::Bool), DType::Bool)})};
}
Results bitwiseAnd(FxTranslation& t) { return bitwise(t, "And"); }
Results bitwiseOr(FxTranslation& t) { return bitwise(t, "Or"); }
Results bitwiseNot(FxTranslation& t) { return bitwise(t, "Not"); }

// --- Reductions, normalization, softmax -------------------------------------------------

std::vector<int64_t> axesOf(FxTranslation& t, Value* x, size_t position) {
  std::vector<int64_t> dims = t.intsArg(position, "dim", std::vector<int64_t>{});
  for (int64_t& dim : dims) dim = t.axis(dim, t.rankOf(x));
  return dims;
}
Results reduce(FxTranslation& t, std::string_view op) {
  Value* x = t.tensor(0, "self");
  std::vector<int64_t> axes = axesOf(t, x, 1);
  bool keepdim = t.boolArg(2, "keepdim", false);
  std::vector<Value*> inputs = {x};
  if (!axes.empty()) inputs.push_back(t.constantInts(axes));
  Value* reduced = t.emitValue(op, inputs, {{"keepdims", int64_t{keepdim}}});
  return {t.cast(reduced, t.resultDType())};
}
Results mean(FxTranslation& t) { return reduce(t, "ReduceMean"); }
Results sum(FxTranslation& t) { return reduce(t, "ReduceSum"); }
Results amax(FxTranslation& t) { return reduce(t, "ReduceMax"); }
Results cumsum(FxTranslation& t) {
  Value* x = t.cast(t.tensor(0, "self"), t.resultDType());
  return {t.emitValue("CumSum", {x, t.constantInts({t.axis(t.intArg(1, "dim"), t.rankOf(x))})})};
}

Results softmax(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  return {t.emitValue("Softmax", {x}, {{"axis", t.axis(t.intArg(1, "dim"), t.rankOf(x))}})};
}
Results batchNormNoTraining(FxTranslation& t) {
  Value* x = t.tensor(0, "input");
  Value* weight = t.optionalTensor(1, "weight");
  Value* bias = t.optionalTensor(2, "bias");
  Value* mean_value = t.tensor(3, "running_mean");
  Value* var = t.tensor(4, "running_var");
  if (!weight || !bias) t.fail("batch norm without affine weight and bias is not translated");
  double eps = t.floatArg(6, "eps");
  return {t.emitValue("BatchNormalization", {x, weight, bias, mean_value, var}, {{"epsilon", eps}})};
}
Results layerNorm(FxTranslation& t) {
  Value* x = t.tensor(0, "input");
  std::vector<int64_t> normalized = t.intsArg(1, "normalized_shape");
  Value* weight = t.optionalTensor(2, "weight");
  Value* bias = t.optionalTensor(3, "bias");
  if (!weight) t.fail("layer norm without a weight is not translated");
  std::vector<Value*> inputs = {x, weight};
  if (bias) inputs.push_back(bias);
  return {t.emitValue("LayerNormalization", inputs,
                      {{"axis", -static_cast<int64_t>(normalized.size())}, {"epsilon", t.floatArg(4, "eps")}})};
}

// Estuary's fused ops as PyTorch sees them (python/estuary/torch/ops.py), for user
// replacements: into core ops that the pipeline fuses (fuse_add_rms_norm).
Results rmsNorm(FxTranslation& t) {
  return {t.emitValue("RMSNormalization", {t.tensor(0, "x"), t.tensor(1, "gamma")},
                      {{"axis", int64_t{-1}}, {"epsilon", t.floatArg(2, "eps")}})};
}
Results addRmsNorm(FxTranslation& t) {
  Value* sum = t.emitValue("Add", {t.tensor(0, "x1"), t.tensor(1, "x2")});
  Value* y = t.emitValue("RMSNormalization", {sum, t.tensor(2, "gamma")},
                         {{"axis", int64_t{-1}}, {"epsilon", t.floatArg(3, "eps")}});
  return {y, sum};
}
// x [B, H, S, D] (num_heads 0), or [B, S, H*D] with num_heads (what FX mode's kernel reads for
// a q or k laid out as [B, S, H, D] in memory); cos and sin [B or 1, S, D/2] (the halves of
// tables whose halves are equal), or with full_tables [B or 1, S, D] (any tables).
Results rotaryEmbedding(FxTranslation& t) {
  Value* x = t.tensor(0, "x");
  FxTranslation::Attributes attributes = {{"interleaved", int64_t{0}},
                                          {"full_tables", int64_t{t.intArg(4, "full_tables", 0) != 0}}};
  if (t.rankOf(x) == 3) attributes.emplace_back("num_heads", t.intArg(3, "num_heads"));
  return {t.emitValue("RotaryEmbedding", {x, t.tensor(1, "cos"), t.tensor(2, "sin")}, std::move(attributes))};
}
Results swiglu(FxTranslation& t) { return {t.emitValue("SwiGLU", {t.tensor(0, "a"), t.tensor(1, "b")})}; }

// --- Convolution, pooling, matrix products ----------------------------------------------

std::vector<int64_t> twice(const std::vector<int64_t>& pads) {
  std::vector<int64_t> both = pads;
  both.insert(both.end(), pads.begin(), pads.end());
  return both;
}
std::vector<int64_t> spatial(std::vector<int64_t> values, size_t count, const FxTranslation& t, const char* what) {
  if (values.size() == 1 && count > 1) values.assign(count, values[0]);
  if (values.size() != count) t.fail(what, " has ", values.size(), " entries for ", count, " spatial dims");
  return values;
}
Results convolution(FxTranslation& t) {
  Value* x = t.tensor(0, "input");
  Value* w = t.tensor(1, "weight");
  Value* b = t.optionalTensor(2, "bias");
  size_t n = t.rankOf(w) - 2;
  std::vector<int64_t> strides = spatial(t.intsArg(3, "stride"), n, t, "stride");
  std::vector<int64_t> pads = spatial(t.intsArg(4, "padding"), n, t, "padding");
  std::vector<int64_t> dilations = spatial(t.intsArg(5, "dilation"), n, t, "dilation");
  bool transposed = t.boolArg(6, "transposed");
  int64_t groups = t.intArg(8, "groups");
  std::vector<Value*> inputs = {x, w};
  if (b) inputs.push_back(b);
  FxTranslation::Attributes attributes = {
      {"strides", strides}, {"pads", twice(pads)}, {"dilations", dilations}, {"group", groups}};
  if (!transposed) return {t.emitValue("Conv", inputs, std::move(attributes))};
  attributes.emplace_back("output_padding", spatial(t.intsArg(7, "output_padding"), n, t, "output_padding"));
  return {t.emitValue("ConvTranspose", inputs, std::move(attributes))};
}
Results maxPool(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  std::vector<int64_t> kernel = t.intsArg(1, "kernel_size");
  size_t n = t.rankOf(x) - 2;
  kernel = spatial(kernel, n, t, "kernel_size");
  std::vector<int64_t> strides = t.intsArg(2, "stride", std::vector<int64_t>{});
  strides = strides.empty() ? kernel : spatial(strides, n, t, "stride");
  std::vector<int64_t> pads = spatial(t.intsArg(3, "padding", std::vector<int64_t>{0}), n, t, "padding");
  std::vector<int64_t> dilations = spatial(t.intsArg(4, "dilation", std::vector<int64_t>{1}), n, t, "dilation");
  bool ceil_mode = t.boolArg(5, "ceil_mode", false);
  // The indices result is left out: inference graphs only read the values.
  return {t.emitValue("MaxPool", {x}, {{"kernel_shape", kernel}, {"strides", strides}, {"pads", twice(pads)},
                                       {"dilations", dilations}, {"ceil_mode", int64_t{ceil_mode}}})};
}
Results addmm(FxTranslation& t) {
  Value* bias = t.tensor(0, "self");
  return {t.emitValue("Gemm", {t.tensor(1, "mat1"), t.tensor(2, "mat2"), bias},
                      {{"beta", t.floatArg(3, "beta", 1.0)}, {"alpha", t.floatArg(4, "alpha", 1.0)}})};
}
Results matmul(FxTranslation& t) { return {t.emitValue("MatMul", {t.tensor(0, "self"), t.tensor(1, "mat2")})}; }
Results attention(FxTranslation& t) {
  Value* q = t.tensor(0, "query");
  std::vector<Value*> inputs = {q, t.tensor(1, "key"), t.tensor(2, "value")};
  if (t.floatArg(3, "dropout_p", 0.0) != 0.0) t.fail("dropout in attention is not translated");
  if (Value* mask = t.optionalTensor(5, "attn_mask")) {
    inputs.push_back(mask->dtype() == DType::Bool ? mask : t.cast(mask, q->dtype()));
  }
  FxTranslation::Attributes attributes = {{"is_causal", int64_t{t.boolArg(4, "is_causal", false)}}};
  if (t.arg(6, "scale")) attributes.emplace_back("scale", t.floatArg(6, "scale"));
  // The logsumexp result is left out: inference graphs only read the output.
  return {t.emitValue("Attention", inputs, std::move(attributes))};
}

// --- Shapes and views (pure values in a functional graph) --------------------------------

Results reshape(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  return {t.emitValue("Reshape", {x, t.sizesArg(1, "size")})};
}
Results transposeLast(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  if (t.rankOf(x) < 2) return {t.emitValue("Identity", {x})};
  return {t.emitValue("Transpose", {x}, {{"perm", std::vector<int64_t>{1, 0}}})};
}
Results transpose(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  size_t rank = t.rankOf(x);
  std::vector<int64_t> perm(rank);
  for (size_t i = 0; i < rank; ++i) perm[i] = static_cast<int64_t>(i);
  std::swap(perm[t.axis(t.intArg(1, "dim0"), rank)], perm[t.axis(t.intArg(2, "dim1"), rank)]);
  return {t.emitValue("Transpose", {x}, {{"perm", perm}})};
}
Results permute(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  std::vector<int64_t> perm = t.intsArg(1, "dims");
  for (int64_t& dim : perm) dim = t.axis(dim, t.rankOf(x));
  return {t.emitValue("Transpose", {x}, {{"perm", perm}})};
}
Results expand(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  FxArg sizes = t.requiredArg(1, "size");
  // -1 keeps the dim: Expand's broadcasting of a 1 does the same.
  for (FxArg& size : sizes.list) {
    if (size.kind == FxArg::Kind::Int && size.int_value == -1) size.int_value = 1;
  }
  return {t.emitValue("Expand", {x, t.sizesValue(sizes)})};
}

Results unsqueeze(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  int64_t dim = t.axis(t.intArg(1, "dim"), t.rankOf(x) + 1);
  return {t.emitValue("Unsqueeze", {x, t.constantInts({dim})})};
}
Results squeezeDims(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  std::vector<int64_t> axes;
  for (int64_t dim : t.intsArg(1, "dim")) {
    int64_t axis = t.axis(dim, t.rankOf(x));
    const Dim& size = x->shape()[axis];
    if (size.isStatic() && size.value() == 1) axes.push_back(axis);  // PyTorch keeps dims != 1
  }
  if (axes.empty()) return {t.emitValue("Identity", {x})};
  return {t.emitValue("Squeeze", {x, t.constantInts(axes)})};
}
Results slice(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  int64_t dim = t.axis(t.intArg(1, "dim", 0), t.rankOf(x));
  const FxArg* start = t.arg(2, "start");
  const FxArg* end = t.arg(3, "end");
  Value* starts = start ? t.sizeValue(*start) : t.constantInts({0});
  Value* ends = end ? t.sizeValue(*end) : t.constantInts({std::numeric_limits<int64_t>::max()});
  return {t.emitValue("Slice", {x, starts, ends, t.constantInts({dim}), t.constantInts({t.intArg(4, "step", 1)})})};
}
Results select(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  int64_t dim = t.axis(t.intArg(1, "dim"), t.rankOf(x));
  Value* index = t.emitValue("Reshape", {t.sizeValue(t.requiredArg(2, "index")), t.constantInts({})});
  return {t.emitValue("Gather", {x, index}, {{"axis", dim}})};
}
Results cat(FxTranslation& t) {
  const FxArg* tensors = t.arg(0, "tensors");
  if (!tensors || tensors->kind != FxArg::Kind::List) t.fail("argument 'tensors' must be a list");
  std::vector<Value*> inputs;
  for (const FxArg& item : tensors->list) inputs.push_back(t.cast(t.valueOf(item), t.resultDType()));
  // PyTorch still accepts a legacy empty tensor (1-D, 0 elements) beside tensors of any rank,
  // and leaves it out.
  size_t rank = 0;
  for (Value* input : inputs) rank = std::max(rank, t.rankOf(input));
  auto legacy_empty = [&](Value* input) {
    const Shape& shape = input->shape();
    return rank > 1 && shape.rank() == 1 && shape[0].isStatic() && shape[0].value() == 0;
  };
  inputs.erase(std::remove_if(inputs.begin(), inputs.end(), legacy_empty), inputs.end());
  if (inputs.empty()) t.fail("every tensor to concatenate is empty");
  int64_t dim = t.axis(t.intArg(1, "dim", 0), rank);
  if (inputs.size() == 1) return {t.emitValue("Identity", {inputs[0]})};
  return {t.emitValue("Concat", inputs, {{"axis", dim}})};
}
// as_strided(self, size, stride, storage_offset) where it is a view a reshape gives: the
// strides are the contiguous ones of `size` (dims of size 1 may have any stride), from offset 0
// over all of self's elements. Values in the IR are contiguous, so that is a Reshape; any
// other striding reads memory the IR does not describe, and is refused.
Results asStrided(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  std::vector<int64_t> size = t.intsArg(1, "size");
  std::vector<int64_t> stride = t.intsArg(2, "stride");
  if (size.size() != stride.size()) t.fail("size and stride have ", size.size(), " and ", stride.size(), " entries");
  if (t.intArg(3, "storage_offset", 0) != 0) t.fail("as_strided from a storage offset is not translated");
  int64_t expected = 1;
  for (size_t d = size.size(); d-- > 0;) {
    if (size[d] != 1 && stride[d] != expected) {
      t.fail("as_strided with stride ", stride[d], " at dim ", d, " (", expected,
             " for a contiguous tensor) is not a reshape, which is all that is translated");
    }
    expected *= size[d];
  }
  if (!x->shape().isStatic() || x->shape().numElements() != expected) {
    t.fail("as_strided to ", expected, " elements of a tensor of ", x->shape().str(), " is not translated");
  }
  return {t.emitValue("Reshape", {x, t.constantInts(size)})};
}
// roll(self, shifts, dims): each shift is a slice of the tail put before the head; with no
// dims, the flattened tensor rolls and takes its shape back.
Results roll(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  std::vector<int64_t> shifts = t.intsArg(1, "shifts");
  std::vector<int64_t> dims = t.intsArg(2, "dims", std::vector<int64_t>{});
  Value* shape = nullptr;
  Value* y = x;
  if (dims.empty()) {
    shape = t.emitValue("Shape", {x});
    y = t.emitValue("Reshape", {x, t.constantInts({-1})});
    dims = {0};
  }
  if (shifts.size() != dims.size()) t.fail("roll has ", shifts.size(), " shifts for ", dims.size(), " dims");
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t dim = t.axis(dims[i], t.rankOf(y));
    // The split point size - shift mod size, computed in the graph: the size may be symbolic.
    Value* size = t.emitValue("Shape", {y}, {{"start", dim}, {"end", dim + 1}});
    Value* divisor = t.emitValue("Max", {size, t.constantInts({1})});  // an empty dim rolls by 0
    Value* shift = t.emitValue("Mod", {t.constantInts({shifts[i]}), divisor}, {{"fmod", int64_t{0}}});
    Value* split = t.emitValue("Sub", {size, shift});
    Value* axis = t.constantInts({dim});
    Value* tail = t.emitValue("Slice", {y, split, t.constantInts({std::numeric_limits<int64_t>::max()}), axis});
    Value* head = t.emitValue("Slice", {y, t.constantInts({0}), split, axis});
    y = t.emitValue("Concat", {tail, head}, {{"axis", dim}});
  }
  return {shape ? t.emitValue("Reshape", {y, shape}) : t.emitValue("Identity", {y})};
}
// constant_pad_nd(self, pad, value): pad lists (begin, end) pairs from the last dim backwards;
// negative pads crop.
Results constantPad(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  const FxArg& pad = t.requiredArg(1, "pad");
  if (pad.kind != FxArg::Kind::List) t.fail("argument 'pad' must be a list");
  const size_t rank = t.rankOf(x);
  if (pad.list.size() % 2 != 0 || pad.list.size() / 2 > rank) {
    t.fail("pad has ", pad.list.size(), " entries for a rank-", rank, " tensor");
  }
  // Pads may be sizes computed in the graph (padding to a multiple of a window).
  std::vector<Value*> pads(2 * rank, nullptr);
  for (size_t i = 0; i < pad.list.size() / 2; ++i) {
    const size_t dim = rank - 1 - i;
    pads[dim] = t.sizeValue(pad.list[2 * i]);
    pads[rank + dim] = t.sizeValue(pad.list[2 * i + 1]);
  }
  for (Value*& value : pads) {
    if (!value) value = t.constantInts({0});
  }
  return {t.emitValue("Pad", {x, t.emitValue("Concat", pads, {{"axis", int64_t{0}}}),
                              t.scalar(x->dtype(), t.floatArg(2, "value", 0.0))},
                      {{"mode", std::string("constant")}})};
}
// gather(self, dim, index): GatherElements.
Results gather(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  return {t.emitValue("GatherElements", {x, t.tensor(2, "index")}, {{"axis", t.axis(t.intArg(1, "dim"), t.rankOf(x))}})};
}
// full(size, fill_value), zeros/ones(size), new_full/new_ones/new_zeros(self, size, ...), full_like/ones_like/
// zeros_like(self, ...), scalar_tensor(s): a tensor of the result's dtype filled with one value.
Value* filled(FxTranslation& t, Value* shape, double value) {
  return t.emitValue("Expand", {t.scalar(t.resultDType(), value), shape});
}
// empty(size): its values are unspecified; zeros are as good as any and fold away.
Results empty(FxTranslation& t) { return {filled(t, t.sizesArg(0, "size"), 0.0)}; }
Results zeros(FxTranslation& t) { return {filled(t, t.sizesArg(0, "size"), 0.0)}; }
Results ones(FxTranslation& t) { return {filled(t, t.sizesArg(0, "size"), 1.0)}; }
Results full(FxTranslation& t) { return {filled(t, t.sizesArg(0, "size"), t.floatArg(1, "fill_value"))}; }
Results newFull(FxTranslation& t) { return {filled(t, t.sizesArg(1, "size"), t.floatArg(2, "fill_value"))}; }
Results newOnes(FxTranslation& t) { return {filled(t, t.sizesArg(1, "size"), 1.0)}; }
Results newZeros(FxTranslation& t) { return {filled(t, t.sizesArg(1, "size"), 0.0)}; }
Results fullLike(FxTranslation& t) {
  return {filled(t, t.emitValue("Shape", {t.tensor(0, "self")}), t.floatArg(1, "fill_value"))};
}
Results onesLike(FxTranslation& t) { return {filled(t, t.emitValue("Shape", {t.tensor(0, "self")}), 1.0)}; }
Results zerosLike(FxTranslation& t) { return {filled(t, t.emitValue("Shape", {t.tensor(0, "self")}), 0.0)}; }
Results scalarTensor(FxTranslation& t) {
  const FxArg& value = t.requiredArg(0, "s");
  if (value.isNode()) return {t.cast(t.emitValue("Reshape", {t.sizeValue(value), t.constantInts({})}), t.resultDType())};
  return {t.scalar(t.resultDType(), t.floatArg(0, "s"))};
}
Results split(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  int64_t dim = t.axis(t.intArg(2, "dim", 0), t.rankOf(x));
  const Dim& size = x->shape()[dim];
  if (!size.isStatic()) t.fail("splitting dim ", dim, " of symbolic size ", size.str(), " is not translated");
  std::vector<int64_t> sizes;
  if (t.node().target == "aten.split_with_sizes.default") {
    sizes = t.intsArg(1, "split_sizes");
  } else {
    int64_t chunk = t.intArg(1, "split_size");
    for (int64_t at = 0; at < size.value(); at += chunk) sizes.push_back(std::min(chunk, size.value() - at));
  }
  Node* node = t.emit("Split", {x, t.constantInts(sizes)}, {{"axis", dim}}, sizes.size());
  return node->outputs();
}

// --- Indexing, generators, in-place updates ----------------------------------------------

Results embedding(FxTranslation& t) {
  return {t.emitValue("Gather", {t.tensor(0, "weight"), t.tensor(1, "indices")}, {{"axis", int64_t{0}}})};
}
// x[..., i0, i1, ...] with several index tensors at dims `positions`: the indices broadcast
// together and pick elements of those dims (GatherND over x with them moved to the front).
// PyTorch puts the result's broadcast dims where the indexed dims were when these are
// adjacent, and first otherwise.
Value* gatherByIndexTensors(FxTranslation& t, Value* x, const std::vector<size_t>& positions,
                            const std::vector<Value*>& index_values) {
  const size_t rank = t.rankOf(x);
  std::vector<int64_t> perm(positions.begin(), positions.end());
  for (size_t d = 0; d < rank; ++d) {
    if (std::find(positions.begin(), positions.end(), d) == positions.end()) perm.push_back(static_cast<int64_t>(d));
  }
  Value* front = t.emitValue("Transpose", {x}, {{"perm", perm}});
  // Broadcast the indices to one shape, then stack them along a new last dim.
  Value* shape = t.emitValue("Shape", {index_values[0]});
  for (size_t i = 1; i < index_values.size(); ++i) {
    Value* ones = t.emitValue("Expand", {t.scalar(DType::I64, 0), shape});
    shape = t.emitValue("Shape", {t.emitValue("Add", {ones, index_values[i]})});
  }
  std::vector<Value*> stacked;
  for (Value* index_value : index_values) {
    stacked.push_back(t.emitValue("Unsqueeze", {t.emitValue("Expand", {index_value, shape}), t.constantInts({-1})}));
  }
  Value* gathered = t.emitValue("GatherND", {front, t.emitValue("Concat", stacked, {{"axis", int64_t{-1}}})});
  bool adjacent = true;
  for (size_t i = 1; i < positions.size(); ++i) adjacent = adjacent && positions[i] == positions[i - 1] + 1;
  if (!adjacent || positions[0] == 0) return gathered;
  // Adjacent and not first: the broadcast dims go back to where the indexed dims were.
  const size_t broadcast = t.rankOf(gathered) - (rank - positions.size());
  std::vector<int64_t> back;
  for (size_t d = 0; d < positions[0]; ++d) back.push_back(static_cast<int64_t>(broadcast + d));
  for (size_t d = 0; d < broadcast; ++d) back.push_back(static_cast<int64_t>(d));
  for (size_t d = broadcast + positions[0]; d < t.rankOf(gathered); ++d) back.push_back(static_cast<int64_t>(d));
  return t.emitValue("Transpose", {gathered}, {{"perm", back}});
}
Results index(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  const FxArg* indices = t.arg(1, "indices");
  if (!indices || indices->kind != FxArg::Kind::List) t.fail("argument 'indices' must be a list");
  std::vector<size_t> positions;
  std::vector<Value*> index_values;
  for (size_t i = 0; i < indices->list.size(); ++i) {
    if (indices->list[i].isNone()) continue;
    Value* index_value = t.valueOf(indices->list[i]);
    if (index_value->dtype() == DType::Bool) t.fail("boolean mask indexing is not translated");
    positions.push_back(i);
    index_values.push_back(t.cast(index_value, DType::I64));
  }
  if (positions.empty()) t.fail("no index tensor given");
  if (positions.size() == 1) return {t.emitValue("Gather", {x, index_values[0]}, {{"axis", static_cast<int64_t>(positions[0])}})};
  return {gatherByIndexTensors(t, x, positions, index_values)};
}
// Writes `source` into `self` at positions `index` (1-D, i64) along `dim`: the index
// broadcast over the source's other dims, for ScatterElements.
Value* scatterAlong(FxTranslation& t, Value* self, int64_t dim, Value* index, Value* source) {
  std::vector<int64_t> index_shape(t.rankOf(self), 1);
  index_shape[dim] = -1;
  Value* indices = t.emitValue("Reshape", {index, t.constantInts(index_shape)});
  indices = t.emitValue("Expand", {indices, t.emitValue("Shape", {source})});
  return t.emitValue("ScatterElements", {self, indices, source}, {{"axis", dim}});
}
// A position along `dim` of `self` as a 0-D i64 value; negative integers count from the end.
Value* positionAlong(FxTranslation& t, Value* self, int64_t dim, const FxArg& position) {
  if (position.kind == FxArg::Kind::Int && position.int_value < 0) {
    const Dim& size = self->shape()[dim];
    if (!size.isStatic()) t.fail("a negative position along dim ", dim, " of symbolic size ", size.str(), " is not translated");
    FxArg wrapped = position;
    wrapped.int_value += size.value();
    return t.emitValue("Reshape", {t.sizeValue(wrapped), t.constantInts({})});
  }
  return t.emitValue("Reshape", {t.sizeValue(position), t.constantInts({})});
}
Results indexCopy(FxTranslation& t) {
  Value* self = t.tensor(0, "self");
  int64_t dim = t.axis(t.intArg(1, "dim"), t.rankOf(self));
  return {scatterAlong(t, self, dim, t.tensor(2, "index"), t.tensor(3, "source"))};
}
// self[..., index, ...] = values with one index tensor (the other entries None), as a
// sliding-window KV cache writes; accumulate adds instead.
Results indexPut(FxTranslation& t) {
  Value* self = t.tensor(0, "self");
  const FxArg& indices = t.requiredArg(1, "indices");
  if (indices.kind != FxArg::Kind::List) t.fail("argument 'indices' must be a list");
  std::optional<size_t> dim;
  for (size_t i = 0; i < indices.list.size(); ++i) {
    if (indices.list[i].isNone()) continue;
    if (dim) t.fail("index_put with several index tensors is not translated");
    dim = i;
  }
  if (!dim || *dim >= t.rankOf(self)) t.fail("index_put needs one index tensor within the rank of 'self'");
  Value* index = t.valueOf(indices.list[*dim]);
  if (index->dtype() == DType::Bool) t.fail("index_put with a boolean mask is not translated");
  if (t.rankOf(index) != 1) t.fail("index_put with a ", t.rankOf(index), "-D index tensor is not translated");
  const auto d = static_cast<int64_t>(*dim);
  Value* written_shape = t.emitValue("Concat", {t.emitValue("Shape", {self}, {{"start", int64_t{0}}, {"end", d}}),
                                                t.emitValue("Shape", {index}),
                                                t.emitValue("Shape", {self}, {{"start", d + 1}})},
                                     {{"axis", int64_t{0}}});
  Value* values = t.emitValue("Expand", {t.cast(t.tensor(2, "values"), self->dtype()), written_shape});
  std::vector<int64_t> index_shape(t.rankOf(self), 1);
  index_shape[*dim] = -1;
  Value* positions = t.emitValue("Expand", {t.emitValue("Reshape", {index, t.constantInts(index_shape)}), written_shape});
  std::vector<std::pair<std::string, Attribute>> attributes = {{"axis", d}};
  if (t.boolArg(3, "accumulate", false)) attributes.emplace_back("reduction", std::string("add"));
  return {t.emitValue("ScatterElements", {self, positions, values}, std::move(attributes))};
}
Results selectScatter(FxTranslation& t) {
  // self[..., index, ...] = src along dim (src lacks that dim).
  Value* self = t.tensor(0, "self");
  int64_t dim = t.axis(t.intArg(2, "dim"), t.rankOf(self));
  Value* source = t.emitValue("Unsqueeze", {t.cast(t.tensor(1, "src"), self->dtype()), t.constantInts({dim})});
  Value* index = t.emitValue("Reshape", {positionAlong(t, self, dim, t.requiredArg(3, "index")), t.constantInts({1})});
  return {scatterAlong(t, self, dim, index, source)};
}
Results sliceScatter(FxTranslation& t) {
  // self[..., start:end:step, ...] = src along dim.
  Value* self = t.tensor(0, "self");
  int64_t dim = t.axis(t.intArg(2, "dim", 0), t.rankOf(self));
  Value* source = t.cast(t.tensor(1, "src"), self->dtype());
  const FxArg* start = t.arg(3, "start");
  Value* from = start ? positionAlong(t, self, dim, *start) : t.scalar(DType::I64, 0);
  // The end does not matter beyond the source's extent: the positions are start + k * step
  // for each of the source's elements along dim.
  Value* count = t.emitValue("Reshape", {t.emitValue("Shape", {source}, {{"start", dim}, {"end", dim + 1}}),
                                         t.constantInts({})});
  Value* step = t.scalar(DType::I64, static_cast<double>(t.intArg(5, "step", 1)));
  Value* index = t.emitValue("Range", {t.scalar(DType::I64, 0), count, t.scalar(DType::I64, 1)});
  index = t.emitValue("Add", {t.emitValue("Mul", {index, step}), from});
  return {scatterAlong(t, self, dim, index, source)};
}
Results copyInto(FxTranslation& t) {
  // aten.copy: the source broadcast to self's shape, in self's dtype.
  Value* self = t.tensor(0, "self");
  Value* source = t.cast(t.tensor(1, "src"), self->dtype());
  return {t.emitValue("Expand", {source, t.emitValue("Shape", {self})})};
}
Results copyInPlace(FxTranslation& t) {
  // Functionalization's epilogue: the graph input `self` holds `src` after the run.
  Value* self = t.tensor(0, "self");
  if (!self->isGraphInput()) t.fail("copy_ into '", self->name(), "', which is not a graph input, is not translated");
  Value* source = t.cast(t.tensor(1, "src"), self->dtype());
  if (source->shape() != self->shape()) source = t.emitValue("Expand", {source, t.emitValue("Shape", {self})});
  t.graph().setInputMutable(self, true);
  t.graph().setInputUpdate(self, source);
  return {source};
}
Results arange(FxTranslation& t) {
  DType dtype = t.resultDType();
  const std::string& target = t.node().target;
  auto number = [&](size_t position, std::string_view name) {
    const FxArg* found = t.arg(position, name);
    if (found && found->isNode()) {
      return t.cast(t.emitValue("Reshape", {t.sizeValue(*found), t.constantInts({})}), dtype);
    }
    return t.scalar(dtype, t.floatArg(position, name));
  };
  if (target == "aten.arange.default") return {t.emitValue("Range", {t.scalar(dtype, 0), number(0, "end"), t.scalar(dtype, 1)})};
  Value* start = number(0, "start");
  Value* end = number(1, "end");
  Value* step = target == "aten.arange.start_step" && t.arg(2, "step") ? number(2, "step") : t.scalar(dtype, 1);
  return {t.emitValue("Range", {start, end, step})};
}

// --- Python-level nodes: tuple access and symbolic size arithmetic ------------------------

Results getitem(FxTranslation& t) {
  int64_t i = t.intArg(1, "b");
  if (i < 0) t.fail("result ", i, " of a node does not exist");
  return {t.resultOf(t.requiredArg(0, "a"), static_cast<size_t>(i))};
}
Results symSize(FxTranslation& t) {
  Value* x = t.tensor(0, "self");
  int64_t dim = t.axis(t.intArg(1, "dim"), t.rankOf(x));
  return {t.emitValue("Shape", {x}, {{"start", dim}, {"end", dim + 1}})};
}
Results symArithmetic(FxTranslation& t, std::string_view op) {
  return {t.emitValue(op, {t.sizeValue(t.requiredArg(0, "a")), t.sizeValue(t.requiredArg(1, "b"))})};
}
Results symMul(FxTranslation& t) { return symArithmetic(t, "Mul"); }
Results symAdd(FxTranslation& t) { return symArithmetic(t, "Add"); }
Results symSub(FxTranslation& t) { return symArithmetic(t, "Sub"); }
Results symFloorDiv(FxTranslation& t) { return symArithmetic(t, "Div"); }  // sizes are >= 0
Results symMax(FxTranslation& t) { return symArithmetic(t, "Max"); }
Results symMin(FxTranslation& t) { return symArithmetic(t, "Min"); }
Results symNeg(FxTranslation& t) { return {t.emitValue("Neg", {t.sizeValue(t.requiredArg(0, "a"))})}; }
Results symMod(FxTranslation& t) {
  return {t.emitValue("Mod", {t.sizeValue(t.requiredArg(0, "a")), t.sizeValue(t.requiredArg(1, "b"))},
                      {{"fmod", int64_t{0}}})};
}
// a ** b with b a small constant, as sizes use it (a window count squared).
Results symPow(FxTranslation& t) {
  Value* base = t.sizeValue(t.requiredArg(0, "a"));
  const int64_t exponent = t.intArg(1, "b");
  if (exponent < 0 || exponent > 8) t.fail("a size to the power ", exponent, " is not translated");
  Value* result = t.constantInts({1});
  for (int64_t i = 0; i < exponent; ++i) result = t.emitValue("Mul", {result, base});
  return {result};
}
// torch.sym_sum(sizes): their sum.
Results symSum(FxTranslation& t) {
  const FxArg& sizes = t.requiredArg(0, "arg0");
  if (sizes.kind != FxArg::Kind::List || sizes.list.empty()) t.fail("torch.sym_sum takes a non-empty list of sizes");
  Value* sum = t.sizeValue(sizes.list[0]);
  for (size_t i = 1; i < sizes.list.size(); ++i) sum = t.emitValue("Add", {sum, t.sizeValue(sizes.list[i])});
  return {sum};
}

const std::map<std::string, FxOpTranslator>& table() {
  static const auto* translators = new std::map<std::string, FxOpTranslator>{
      {"aten.add.Tensor", add}, {"aten.add.Scalar", add}, {"aten.sub.Tensor", sub}, {"aten.sub.Scalar", sub},
      {"aten.rsub.Scalar", rsub}, {"aten.rsub.Tensor", rsub}, {"aten.mul.Tensor", mul}, {"aten.mul.Scalar", mul},
      {"aten.div.Tensor", div}, {"aten.div.Scalar", div}, {"aten.true_divide.Tensor", div},
      {"aten.relu.default", unary<kRelu>}, {"aten.neg.default", unary<kNeg>}, {"aten.exp.default", unary<kExp>},
      {"aten.log.default", unary<kLog>}, {"aten.sqrt.default", unary<kSqrt>}, {"aten.tanh.default", unary<kTanh>},
      {"aten.sigmoid.default", unary<kSigmoid>}, {"aten.abs.default", unary<kAbs>}, {"aten.erf.default", unary<kErf>},
      {"aten.sin.default", unary<kSin>}, {"aten.cos.default", unary<kCos>},
      {"aten.reciprocal.default", unary<kReciprocal>}, {"aten.clone.default", unary<kIdentity>},
      {"aten.alias.default", unary<kIdentity>}, {"aten.lift_fresh_copy.default", unary<kIdentity>}, {"aten.rsqrt.default", rsqrt}, {"aten.silu.default", silu},
      {"aten.gelu.default", gelu}, {"aten.hardswish.default", hardswish}, {"aten.hardsigmoid.default", hardsigmoid}, {"aten.hardtanh.default", hardtanh}, {"aten.pow.Tensor_Scalar", powScalar},
      {"prims.convert_element_type.default", convertElementType}, {"aten._to_copy.default", toCopy},
      {"aten.where.self", where}, {"aten.masked_fill.Scalar", maskedFill},
      {"aten.mean.dim", mean}, {"aten.sum.dim_IntList", sum}, {"aten.amax.default", amax},
      {"aten._softmax.default", softmax}, {"aten.softmax.int", softmax},
      {"aten._native_batch_norm_legit_no_training.default", batchNormNoTraining},
      {"aten.native_layer_norm.default", layerNorm}, {"estuary.rms_norm.default", rmsNorm},
      {"estuary.add_rms_norm.default", addRmsNorm}, {"estuary.rotary_embedding.default", rotaryEmbedding},
      {"estuary.swiglu.default", swiglu},
      {"aten.convolution.default", convolution}, {"aten.max_pool2d_with_indices.default", maxPool},
      {"aten.max_pool2d.default", maxPool}, {"aten.addmm.default", addmm}, {"aten.mm.default", matmul},
      {"aten.bmm.default", matmul},
      {"aten._scaled_dot_product_flash_attention_for_cpu.default", attention},
      {"aten.view.default", reshape}, {"aten._unsafe_view.default", reshape}, {"aten.reshape.default", reshape},
      {"aten.t.default", transposeLast}, {"aten.transpose.int", transpose}, {"aten.permute.default", permute},
      {"aten.expand.default", expand}, {"aten.unsqueeze.default", unsqueeze}, {"aten.squeeze.dim", squeezeDims},
      {"aten.squeeze.dims", squeezeDims}, {"aten.slice.Tensor", slice}, {"aten.select.int", select},
      {"aten.cat.default", cat}, {"aten.split.Tensor", split}, {"aten.split_with_sizes.default", split},
      {"aten.embedding.default", embedding}, {"aten.index.Tensor", index}, {"aten.index_copy.default", indexCopy},
      {"aten.select_scatter.default", selectScatter}, {"aten.slice_scatter.default", sliceScatter},
      {"aten.copy.default", copyInto}, {"aten.copy_.default", copyInPlace},
      {"aten.arange.default", arange}, {"aten.arange.start", arange}, {"aten.arange.start_step", arange},
      {"aten.eq.Tensor", eq}, {"aten.eq.Scalar", eq}, {"aten.ne.Tensor", ne}, {"aten.ne.Scalar", ne},
      {"aten.lt.Tensor", lt}, {"aten.lt.Scalar", lt}, {"aten.le.Tensor", le}, {"aten.le.Scalar", le},
      {"aten.gt.Tensor", gt}, {"aten.gt.Scalar", gt}, {"aten.ge.Tensor", ge}, {"aten.ge.Scalar", ge},
      {"aten.maximum.default", maximum}, {"aten.minimum.default", minimum},
      {"aten.bitwise_and.Tensor", bitwiseAnd}, {"aten.bitwise_and.Scalar", bitwiseAnd},
      {"aten.bitwise_or.Tensor", bitwiseOr}, {"aten.bitwise_or.Scalar", bitwiseOr},
      {"aten.bitwise_not.default", bitwiseNot}, {"aten.logical_not.default", bitwiseNot},
      {"aten.cumsum.default", cumsum}, {"aten.as_strided.default", asStrided}, {"aten.roll.default", roll}, {"aten.constant_pad_nd.default", constantPad},
      {"aten.gather.default", gather}, {"aten.full.default", full}, {"aten.zeros.default", zeros}, {"aten.ones.default", ones}, {"aten.empty.memory_format", empty}, {"aten.new_full.default", newFull},
      {"aten.new_ones.default", newOnes}, {"aten.new_zeros.default", newZeros}, {"aten.full_like.default", fullLike},
      {"aten.ones_like.default", onesLike}, {"aten.zeros_like.default", zerosLike},
      {"aten.scalar_tensor.default", scalarTensor},
      {"operator.getitem", getitem}, {"aten.sym_size.int", symSize},
      {"operator.mul", symMul}, {"operator.add", symAdd},
      {"operator.sub", symSub}, {"operator.floordiv", symFloorDiv}, {"operator.mod", symMod},
      {"operator.pow", symPow}, {"torch.sym_sum", symSum}, {"torch.sym_max", symMax}, {"torch.sym_min", symMin},
      {"operator.neg", symNeg}, {"aten.index_put.default", indexPut},
  };
  return *translators;
}

}  // namespace

const TranslatorTable& fxTranslators() {
  static const TranslatorTable* translators = [] {
    auto* translators = new TranslatorTable;
    for (const auto& [target, translate] : table()) {
      translators->add(target, [translate = translate](NodeContext& context) {
        FxTranslation translation(context);
        return translate(translation);
      });
    }
    return translators;
  }();
  return *translators;
}

}  // namespace estuary::pytorch
