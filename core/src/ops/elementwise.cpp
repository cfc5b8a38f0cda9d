// Element-wise ops: unary activations and math, binary arithmetic, comparison and logic
// with multidirectional broadcasting, variadic Max/Min/Sum/Mean, Where, Clip, Cast.
#include <functional>

#include "ops/common.h"
#include "ops/register.h"

namespace estuary {
namespace {

using Combine = std::function<SymInt(const std::vector<SymInt>&)>;

// Data propagation for an element-wise op on small integer tensors: when every input's
// values are known and the result is at most 1-D, computes the result element by
// element (inputs of one element broadcast).
void propagateElementwise(InferenceContext& context, const Combine& combine) {
  const TensorType& result = context.outputTypes()[0];
  if (!result.shape.isRanked() || result.shape.rank() > 1) return;
  std::vector<std::vector<SymInt>> inputs;
  size_t length = 1;
  for (size_t i = 0; i < context.numInputs(); ++i) {
    std::optional<std::vector<SymInt>> values = context.knownValues(i);
    if (!values) return;
    if (values->size() != 1) {
      if (length != 1 && values->size() != length) return;
      length = values->size();
    }
    inputs.push_back(std::move(*values));
  }
  std::vector<SymInt> out;
  out.reserve(length);
  std::vector<SymInt> operands(inputs.size());
  for (size_t k = 0; k < length; ++k) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      operands[i] = inputs[i].empty() ? SymInt() : inputs[i][inputs[i].size() == 1 ? 0 : k];
    }
    out.push_back(combine(operands));
  }
  context.setOutputValues(0, std::move(out));
}

void inferBroadcast(InferenceContext& context) {
  std::vector<Shape> shapes;
  shapes.reserve(context.numInputs());
  for (size_t i = 0; i < context.numInputs(); ++i) shapes.push_back(context.inputShape(i));
  context.setOutputShape(0, broadcastShapes(context, shapes));
}

// Applies `op` to two known integers; an unknown operand gives an unknown result.
std::function<SymInt(const SymInt&, const SymInt&)> onIntegers(std::function<int64_t(int64_t, int64_t)> op) {
  return [op](const SymInt& a, const SymInt& b) {
    return a.isInt() && b.isInt() ? SymInt(op(a.intValue(), b.intValue())) : SymInt();
  };
}

InferenceFn broadcastWithValues(std::function<SymInt(const SymInt&, const SymInt&)> op) {
  return [op](InferenceContext& context) {
    inferBroadcast(context);
    propagateElementwise(context, [&op](const std::vector<SymInt>& v) { return op(v[0], v[1]); });
  };
}

OpSchema unary(const char* op_type, const char* in, const char* out, std::vector<DType> types,
               const char* type_var = "T") {
  OpSchema schema(op_type);
  schema.input(in, type_var).output(out, type_var).typeConstraint(type_var, std::move(types));
  schema.inference(sameShapeAsFirstInput);
  return schema;
}

OpSchema binary(const char* op_type, std::vector<DType> types, const char* result_type = "T") {
  OpSchema schema(op_type);
  schema.input("A", "T").input("B", "T").output("C", result_type);
  schema.typeConstraint("T", std::move(types));
  if (std::string_view(result_type) != "T") schema.typeConstraint(result_type, {DType::Bool});
  schema.inference(inferBroadcast);
  return schema;
}

OpSchema variadic(const char* op_type, const char* out, std::vector<DType> types) {
  OpSchema schema(op_type);
  schema.input("data_0", "T", Arity::Variadic).output(out, "T").typeConstraint("T", std::move(types));
  schema.inference(inferBroadcast);
  return schema;
}

// Integer-only value propagation through Cast and CastLike; values of other element
// types are not tracked.
void propagateCast(InferenceContext& context, DType to) {
  if (isInteger(to) || to == DType::Bool) {
    if (std::optional<std::vector<SymInt>> values = context.knownValues(0)) {
      if (to == DType::Bool) {
        for (SymInt& value : *values) {
          value = value.isInt() ? SymInt(int64_t{value.intValue() != 0}) : SymInt();
        }
      }
      context.setOutputValues(0, std::move(*values));
    }
  }
}

SymInt compareEqual(const SymInt& a, const SymInt& b) {
  if (a == b) return SymInt(int64_t{1});
  if (a.isInt() && b.isInt()) return SymInt(int64_t{0});
  return SymInt();
}

void registerUnaryOps(OpRegistry& registry) {
  const std::vector<DType> floats = floatTypes();
  // ONNX names the operand X/Y for some unary ops and input/output for others.
  for (const char* op : {"Sigmoid", "Reciprocal", "Sqrt", "Floor", "Ceil", "HardSwish", "Softplus",
                         "Mish", "Round"}) {
    registry.add(unary(op, "X", "Y", floats));
  }
  for (const char* op : {"Tanh", "Exp", "Log", "Erf", "Cos", "Sin", "Tan", "Acos", "Asin", "Atan",
                         "Cosh", "Sinh", "Softsign"}) {
    registry.add(unary(op, "input", "output", floats));
  }
  registry.add(unary("Relu", "X", "Y", signedTypes()));
  registry.add(unary("Neg", "X", "Y", signedTypes()).inference([](InferenceContext& context) {
    sameShapeAsFirstInput(context);
    propagateElementwise(context, [](const std::vector<SymInt>& v) { return SymInt(0) - v[0]; });
  }));
  registry.add(unary("Abs", "X", "Y", numericTypes()));
  registry.add(unary("Sign", "input", "output", numericTypes()));
  registry.add(unary("Not", "X", "Y", {DType::Bool}).inference([](InferenceContext& context) {
    sameShapeAsFirstInput(context);
    propagateElementwise(context, [](const std::vector<SymInt>& v) {
      return v[0].isInt() ? SymInt(int64_t{v[0].intValue() == 0}) : SymInt();
    });
  }));
  registry.add(unary("Identity", "input", "output", allTypes(), "V").inference([](InferenceContext& context) {
    sameShapeAsFirstInput(context);
    if (auto values = context.knownValues(0)) context.setOutputValues(0, std::move(*values));
  }));
  registry.add(unary("Gelu", "X", "Y", floats).attr("approximate", AttrKind::String, "none"));
  registry.add(unary("HardSigmoid", "X", "Y", floats)
                   .attr("alpha", AttrKind::Float, 0.2)
                   .attr("beta", AttrKind::Float, 0.5));
  registry.add(unary("LeakyRelu", "X", "Y", floats).attr("alpha", AttrKind::Float, 0.01));
  registry.add(unary("Elu", "X", "Y", floats).attr("alpha", AttrKind::Float, 1.0));
  registry.add(unary("Celu", "X", "Y", floats).attr("alpha", AttrKind::Float, 1.0));
  registry.add(unary("ThresholdedRelu", "X", "Y", floats).attr("alpha", AttrKind::Float, 1.0));
  registry.add(unary("Selu", "X", "Y", floats)
                   .attr("alpha", AttrKind::Float, 1.67326319217681884765625)
                   .attr("gamma", AttrKind::Float, 1.05070102214813232421875));
  registry.add(unary("Swish", "X", "Y", floats).attr("alpha", AttrKind::Float, 1.0));

  for (const char* op : {"IsNaN", "IsInf"}) {
    OpSchema schema(op);
    schema.input("X", "T1").output("Y", "T2");
    schema.typeConstraint("T1", floats).typeConstraint("T2", {DType::Bool});
    if (std::string_view(op) == "IsInf") {
      schema.attr("detect_negative", AttrKind::Int, 1).attr("detect_positive", AttrKind::Int, 1);
    }
    registry.add(schema.inference(sameShapeAsFirstInput));
  }

  registry.add(OpSchema("Clip")
                   .input("input", "T")
                   .input("min", "T", Arity::Optional)
                   .input("max", "T", Arity::Optional)
                   .output("output", "T")
                   .typeConstraint("T", numericTypes())
                   .inference([](InferenceContext& context) {
                     for (size_t i = 1; i < 3; ++i) checkRank(context, i, 0, 0);
                     sameShapeAsFirstInput(context);
                   }));

  registry.add(OpSchema("Cast")
                   .input("input", "T1")
                   .output("output", "T2")
                   .requiredAttr("to", AttrKind::Type)
                   .attr("saturate", AttrKind::Int, 1)
                   .attr("round_mode", AttrKind::String, "up")
                   .typeConstraint("T1", allTypes())
                   .typeConstraint("T2", allTypes())
                   .inference([](InferenceContext& context) {
                     DType to = context.typeAttr("to");
                     if (to == DType::Undefined) context.fail("attribute 'to' must be a defined type");
                     context.setOutputType(0, TensorType(to, context.inputShape(0)));
                     propagateCast(context, to);
                   }));
  registry.add(OpSchema("CastLike")
                   .input("input", "T1")
                   .input("target_type", "T2")
                   .output("output", "T2")
                   .attr("saturate", AttrKind::Int, 1)
                   .attr("round_mode", AttrKind::String, "up")
                   .typeConstraint("T1", allTypes())
                   .typeConstraint("T2", allTypes())
                   .inference([](InferenceContext& context) {
                     sameShapeAsFirstInput(context);
                     propagateCast(context, context.outputDType(0));
                   }));
}

void registerBinaryOps(OpRegistry& registry) {
  registry.add(binary("Add", numericTypes()).inference(broadcastWithValues(std::plus<SymInt>())));
  registry.add(binary("Sub", numericTypes()).inference(broadcastWithValues(std::minus<SymInt>())));
  registry.add(
      binary("Mul", numericTypes()).inference(broadcastWithValues(std::multiplies<SymInt>())));
  registry.add(binary("Div", numericTypes()).inference(broadcastWithValues(std::divides<SymInt>())));
  registry.add(binary("Mod", numericTypes()).attr("fmod", AttrKind::Int, 0).inference([](InferenceContext& context) {
    // Integer values only: with fmod = 0 the remainder takes the divisor's sign (Python's
    // %), with fmod = 1 the dividend's (C's fmod).
    const bool c_style = context.intAttr("fmod") != 0;
    broadcastWithValues(onIntegers([c_style](int64_t a, int64_t b) -> int64_t {
      if (b == 0) return 0;
      int64_t r = a % b;
      if (!c_style && r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    }))(context);
  }));
  registry.add(OpSchema("Pow")
                   .input("X", "T")
                   .input("Y", "T1")
                   .output("Z", "T")
                   .typeConstraint("T", floatAndWideIntTypes())
                   .typeConstraint("T1", numericTypes())
                   .inference(inferBroadcast));
  registry.add(binary("Equal", allTypes(), "T1").inference(broadcastWithValues(compareEqual)));
  const std::pair<const char*, std::function<int64_t(int64_t, int64_t)>> comparisons[] = {
      {"Less", [](int64_t a, int64_t b) { return int64_t{a < b}; }},
      {"LessOrEqual", [](int64_t a, int64_t b) { return int64_t{a <= b}; }},
      {"Greater", [](int64_t a, int64_t b) { return int64_t{a > b}; }},
      {"GreaterOrEqual", [](int64_t a, int64_t b) { return int64_t{a >= b}; }},
  };
  for (const auto& [op, compare] : comparisons) {
    registry.add(binary(op, numericTypes(), "T1").inference(broadcastWithValues(onIntegers(compare))));
  }
  const std::pair<const char*, std::function<int64_t(int64_t, int64_t)>> logic[] = {
      {"And", [](int64_t a, int64_t b) { return int64_t{a != 0 && b != 0}; }},
      {"Or", [](int64_t a, int64_t b) { return int64_t{a != 0 || b != 0}; }},
      {"Xor", [](int64_t a, int64_t b) { return int64_t{(a != 0) != (b != 0)}; }},
  };
  for (const auto& [op, combine] : logic) {
    registry.add(binary(op, {DType::Bool}, "T1").inference(broadcastWithValues(onIntegers(combine))));
  }
  registry.add(OpSchema("PRelu")
                   .input("X", "T")
                   .input("slope", "T")
                   .output("Y", "T")
                   .typeConstraint("T", floatAndWideIntTypes())
                   .inference([](InferenceContext& context) {
                     // Unidirectional: slope broadcasts to X, never the other way, so
                     // no dim of X may grow ([3,1] with slope [1,5] is refused).
                     const Shape& x = context.inputShape(0);
                     const Shape& slope = context.inputShape(1);
                     if (x.isRanked() && slope.isRanked()) {
                       bool fits = slope.rank() <= x.rank();
                       for (size_t i = 1; fits && i <= slope.rank(); ++i) {
                         const Dim& s = slope[slope.rank() - i];
                         const Dim& d = x[x.rank() - i];
                         fits = !(s.isStatic() && s.value() != 1 && d.isStatic() && s.value() != d.value());
                       }
                       if (!fits) context.fail("slope ", slope.str(), " does not broadcast to X ", x.str());
                     }
                     sameShapeAsFirstInput(context);
                   }));
  registry.add(OpSchema("SwiGLU")
                   .input("A", "T")
                   .input("B", "T")
                   .output("Y", "T")
                   .attr("alpha", AttrKind::Float, 1.0)
                   .typeConstraint("T", floatTypes())
                   .inference([](InferenceContext& context) {
                     const Shape& a = context.inputShape(0);
                     const Shape& b = context.inputShape(1);
                     if (!a.isRanked() || !b.isRanked()) {
                       context.setOutputShape(0, a.isRanked() ? a : b);
                       return;
                     }
                     if (a.rank() != b.rank()) {
                       context.fail("A ", a.str(), " and B ", b.str(), " must have the same shape");
                     }
                     std::vector<Dim> dims(a.rank());
                     for (size_t d = 0; d < dims.size(); ++d) {
                       dims[d] = unifyDims(context, a[d], b[d], "A and B sizes at axis " + std::to_string(d));
                     }
                     context.setOutputShape(0, Shape(std::move(dims)));
                   }));

  registry.add(variadic("Max", "max", numericTypes()).inference([](InferenceContext& context) {
    inferBroadcast(context);
    propagateElementwise(context, [](const std::vector<SymInt>& v) {
      SymInt best = v[0];
      for (const SymInt& x : v) {
        if (!x.isInt() || !best.isInt()) return SymInt();
        if (x.intValue() > best.intValue()) best = x;
      }
      return best;
    });
  }));
  registry.add(variadic("Min", "min", numericTypes()).inference([](InferenceContext& context) {
    inferBroadcast(context);
    propagateElementwise(context, [](const std::vector<SymInt>& v) {
      SymInt best = v[0];
      for (const SymInt& x : v) {
        if (!x.isInt() || !best.isInt()) return SymInt();
        if (x.intValue() < best.intValue()) best = x;
      }
      return best;
    });
  }));
  registry.add(variadic("Sum", "sum", floatTypes()));
  registry.add(variadic("Mean", "mean", floatTypes()));

  registry.add(OpSchema("Where")
                   .input("condition", "B")
                   .input("X", "T")
                   .input("Y", "T")
                   .output("output", "T")
                   .typeConstraint("B", {DType::Bool})
                   .typeConstraint("T", allTypes())
                   .inference([](InferenceContext& context) {
                     inferBroadcast(context);
                     propagateElementwise(context, [](const std::vector<SymInt>& v) {
                       if (!v[0].isInt()) return v[1] == v[2] ? v[1] : SymInt();
                       return v[0].intValue() != 0 ? v[1] : v[2];
                     });
                   }));
}

}  // namespace

void registerElementwiseOps(OpRegistry& registry) {
  registerUnaryOps(registry);
  registerBinaryOps(registry);
}

}  // namespace estuary
