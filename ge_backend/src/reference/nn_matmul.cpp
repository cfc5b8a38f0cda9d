// MatMul (numpy semantics: 1-D promotion, batch broadcasting), Gemm (transA/transB,
// alpha/beta, C broadcast to [M, N]) and Einsum (any equation: repeated labels take
// diagonals, "..." broadcasts, no "->" means the implicit output). Floats accumulate in
// double, integers in int64 and wrap to their width when stored.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <string>

#include "reference/nn.h"

namespace estuary::ge::reference {

namespace {

// ---------------------------------------------------------------------------------- MatMul

// A [..., M, K] times B [..., K, N] with the batch dims broadcast; a 1-D A is [1, K], a 1-D
// B is [K, 1] (the added axis is not in Y).
struct MatMulShape {
  int64_t m = 1, k = 1, n = 1;
  std::vector<int64_t> batch;  // Y's batch dims
  TensorDesc a_batch, b_batch;  // A's and B's batch dims, for broadcastOffset
};

MatMulShape matMulShape(const KernelBuildContext& context) {
  const TensorDesc& a = context.input(0);
  const TensorDesc& b = context.input(1);
  const TensorDesc& y = context.output(0);
  if (a.rank < 1 || b.rank < 1) context.fail("MatMul needs inputs of rank 1 or more");
  std::vector<int64_t> a_dims = a.dimVector(), b_dims = b.dimVector();
  if (a.rank == 1) a_dims.insert(a_dims.begin(), 1);
  if (b.rank == 1) b_dims.push_back(1);
  MatMulShape shape;
  shape.m = a_dims[a_dims.size() - 2];
  shape.k = a_dims.back();
  shape.n = b_dims.back();
  const int batch_rank = y.rank - (a.rank > 1 ? 1 : 0) - (b.rank > 1 ? 1 : 0);
  shape.batch.assign(y.dims.begin(), y.dims.begin() + batch_rank);
  shape.a_batch = TensorDesc::of(a.dtype, std::vector<int64_t>(a_dims.begin(), a_dims.end() - 2));
  shape.b_batch = TensorDesc::of(b.dtype, std::vector<int64_t>(b_dims.begin(), b_dims.end() - 2));
  return shape;
}

// Y[batch, i, j] = sum over kk of A[batch, i, kk] * B[batch, kk, j], a row of Y at a time
// (the innermost loop runs along rows of B and Y).
template <typename S>
void matMul(const MatMulShape& shape, const S* a, const S* b, S* y) {
  int64_t batches = 1;
  for (int64_t d : shape.batch) batches *= d;
  std::vector<Accumulator<S>> row(static_cast<size_t>(shape.n));
  for (int64_t batch = 0; batch < batches; ++batch) {
    const std::vector<int64_t> index = unravel(batch, shape.batch);
    const S* a_matrix = a + broadcastOffset(index, shape.a_batch) * shape.m * shape.k;
    const S* b_matrix = b + broadcastOffset(index, shape.b_batch) * shape.k * shape.n;
    S* y_matrix = y + batch * shape.m * shape.n;
    for (int64_t i = 0; i < shape.m; ++i) {
      std::fill(row.begin(), row.end(), Accumulator<S>{0});
      for (int64_t kk = 0; kk < shape.k; ++kk) {
        const Accumulator<S> left = a_matrix[i * shape.k + kk];
        for (int64_t j = 0; j < shape.n; ++j) row[j] += left * static_cast<Accumulator<S>>(b_matrix[kk * shape.n + j]);
      }
      for (int64_t j = 0; j < shape.n; ++j) y_matrix[i * shape.n + j] = static_cast<S>(row[j]);
    }
  }
}

std::unique_ptr<Kernel> makeMatMul(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const MatMulShape shape = matMulShape(context);
  return dispatch(ReferenceDTypes{}, context.input(0).dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    return makeKernel(context, [=](const KernelArgs& args) {
      matMul<S>(shape, static_cast<const S*>(args.inputs[0]), static_cast<const S*>(args.inputs[1]),
                static_cast<S*>(args.outputs[0]));
    });
  });
}

// ------------------------------------------------------------------------------------ Gemm

struct GemmShape {
  int64_t m = 0, k = 0, n = 0;
  bool trans_a = false, trans_b = false;
  double alpha = 1, beta = 1;
  bool has_c = false;  // C given and beta != 0 (the ONNX reference skips C when beta is 0)
  TensorDesc c;        // broadcast to [M, N]
};

// alpha * product + beta * c. Floats in double; integers as the ONNX reference computes them
// (the integer product scaled in float64, truncated back toward zero), exactly in int64
// when alpha and beta are whole numbers.
template <typename S>
S gemmResult(const GemmShape& shape, Accumulator<S> product, Accumulator<S> c) {
  if constexpr (std::is_integral_v<S>) {
    if (shape.alpha == std::trunc(shape.alpha) && shape.beta == std::trunc(shape.beta)) {
      return static_cast<S>(static_cast<int64_t>(shape.alpha) * product + static_cast<int64_t>(shape.beta) * c);
    }
  }
  return static_cast<S>(shape.alpha * static_cast<double>(product) + shape.beta * static_cast<double>(c));
}

// Y[i, j] = alpha * sum over kk of A'[i, kk] * B'[kk, j] + beta * C[i, j], with A' = A or A^T
// and B' = B or B^T.
template <typename S>
void gemm(const GemmShape& shape, const S* a, const S* b, const S* c, S* y) {
  std::vector<Accumulator<S>> row(static_cast<size_t>(shape.n));
  std::vector<int64_t> index(2);
  for (int64_t i = 0; i < shape.m; ++i) {
    std::fill(row.begin(), row.end(), Accumulator<S>{0});
    for (int64_t kk = 0; kk < shape.k; ++kk) {
      const Accumulator<S> left = a[shape.trans_a ? kk * shape.m + i : i * shape.k + kk];
      for (int64_t j = 0; j < shape.n; ++j) {
        row[j] += left * static_cast<Accumulator<S>>(b[shape.trans_b ? j * shape.k + kk : kk * shape.n + j]);
      }
    }
    for (int64_t j = 0; j < shape.n; ++j) {
      index = {i, j};
      const Accumulator<S> addend = shape.has_c ? static_cast<Accumulator<S>>(c[broadcastOffset(index, shape.c)]) : 0;
      y[i * shape.n + j] = gemmResult<S>(shape, row[j], addend);
    }
  }
}

std::unique_ptr<Kernel> makeGemm(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  GemmShape shape;
  shape.trans_a = context.intAttr("transA") != 0;
  shape.trans_b = context.intAttr("transB") != 0;
  shape.alpha = context.floatAttr("alpha");
  shape.beta = context.floatAttr("beta");
  shape.m = context.output(0).dims[0];
  shape.n = context.output(0).dims[1];
  shape.k = context.input(0).dims[shape.trans_a ? 0 : 1];
  shape.has_c = context.hasInput(2) && shape.beta != 0;
  if (shape.has_c) shape.c = context.input(2);
  return dispatch(ReferenceDTypes{}, context.input(0).dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    return makeKernel(context, [=](const KernelArgs& args) {
      gemm<S>(shape, static_cast<const S*>(args.inputs[0]), static_cast<const S*>(args.inputs[1]),
              shape.has_c ? static_cast<const S*>(args.inputs[2]) : nullptr, static_cast<S*>(args.outputs[0]));
    });
  });
}

// ---------------------------------------------------------------------------------- Einsum

// An Einsum equation resolved against the operands' dims. Every axis carries a label: the
// letters, and one label per broadcast axis of "..." (aligned on the right, like numpy). An
// operand's element for given label values is at sum over labels of value * stride, where
// a label's stride in an operand is the sum of the strides of the operand's axes with that
// label (so a repeated label walks the diagonal) and 0 where a "..." axis has size 1.
struct EinsumPlan {
  std::vector<int64_t> sizes;                 // per label
  std::vector<int> output;                    // Y's labels, in order
  std::vector<int> summed;                    // the labels not in Y, summed over
  std::vector<std::vector<int64_t>> strides;  // per operand, per label
};

std::string withoutSpaces(const std::string& text) {
  std::string result;
  for (char c : text) {
    if (c != ' ') result += c;
  }
  return result;
}

std::vector<std::string> splitTerms(const std::string& inputs) {
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    const size_t comma = inputs.find(',', start);
    terms.push_back(inputs.substr(start, comma - start));
    if (comma == std::string::npos) return terms;
    start = comma + 1;
  }
}

class EinsumParser {
 public:
  explicit EinsumParser(const KernelBuildContext& context) : context_(context) {}

  EinsumPlan parse() {
    const std::string equation = withoutSpaces(context_.stringAttr("equation"));
    const size_t arrow = equation.find("->");
    const std::vector<std::string> terms = splitTerms(equation.substr(0, arrow));
    if (terms.size() != context_.numInputs()) context_.fail("equation '", equation, "' does not match the inputs");
    // The broadcast axes of "...": as many as the widest operand's, labels 0 .. ellipsis-1.
    for (size_t i = 0; i < terms.size(); ++i) {
      const size_t letters = lettersOf(terms[i]).size();
      if (hasEllipsis(terms[i])) ellipsis_ = std::max<int64_t>(ellipsis_, context_.input(i).rank - letters);
    }
    plan_.sizes.assign(static_cast<size_t>(ellipsis_), 1);
    for (size_t i = 0; i < terms.size(); ++i) addOperand(terms[i], context_.input(i));
    const std::string output = arrow == std::string::npos ? implicitOutput(terms) : equation.substr(arrow + 2);
    std::vector<bool> in_output(plan_.sizes.size(), false);
    for (int label : labelsOf(output, ellipsis_)) {
      if (plan_.sizes[label] == -1) context_.fail("equation '", equation, "' outputs a label no operand has");
      plan_.output.push_back(label);
      in_output[label] = true;
    }
    for (size_t label = 0; label < plan_.sizes.size(); ++label) {
      if (!in_output[label]) plan_.summed.push_back(static_cast<int>(label));
    }
    return plan_;
  }

 private:
  static bool hasEllipsis(const std::string& term) { return term.find("...") != std::string::npos; }

  static std::string lettersOf(const std::string& term) {
    std::string letters;
    for (char c : term) {
      if (c != '.') letters += c;
    }
    return letters;
  }

  // Numpy's implicit output: the "..." axes, then the letters used once, alphabetically.
  static std::string implicitOutput(const std::vector<std::string>& terms) {
    std::map<char, int> uses;
    bool ellipsis = false;
    for (const std::string& term : terms) {
      ellipsis = ellipsis || hasEllipsis(term);
      for (char c : lettersOf(term)) ++uses[c];
    }
    std::string output = ellipsis ? "..." : "";
    for (const auto& [letter, count] : uses) {
      if (count == 1) output += letter;
    }
    return output;
  }

  int letterLabel(char letter) {
    if (!std::isalpha(static_cast<unsigned char>(letter))) context_.fail("invalid Einsum label '", letter, "'");
    auto [it, inserted] = letters_.emplace(letter, static_cast<int>(plan_.sizes.size()));
    if (inserted) {
      plan_.sizes.push_back(-1);
      for (std::vector<int64_t>& strides : plan_.strides) strides.push_back(0);
    }
    return it->second;
  }

  // The labels of a term's axes, "..." standing for the last `broadcast` broadcast labels
  // (all of them in the output).
  std::vector<int> labelsOf(const std::string& term, int64_t broadcast) {
    std::vector<int> labels;
    for (size_t k = 0; k < term.size(); ++k) {
      if (term.compare(k, 3, "...") == 0) {
        for (int64_t e = ellipsis_ - broadcast; e < ellipsis_; ++e) labels.push_back(static_cast<int>(e));
        k += 2;
      } else {
        labels.push_back(letterLabel(term[k]));
      }
    }
    return labels;
  }

  void addOperand(const std::string& term, const TensorDesc& desc) {
    const int64_t broadcast = desc.rank - static_cast<int64_t>(lettersOf(term).size());
    if (broadcast < 0 || (broadcast > 0 && !hasEllipsis(term))) context_.fail("term '", term, "' does not match ", desc.str());
    plan_.strides.emplace_back(plan_.sizes.size(), 0);
    const std::vector<int> labels = labelsOf(term, broadcast);
    const std::vector<int64_t> strides = stridesOf(desc);
    for (size_t axis = 0; axis < labels.size(); ++axis) {
      const int label = labels[axis];
      const int64_t size = desc.dims[axis];
      int64_t& known = plan_.sizes[label];
      const bool broadcast_axis = label < ellipsis_;
      if (broadcast_axis && size == 1) continue;  // broadcasts: stride 0
      if (known != -1 && known != size && !(broadcast_axis && known == 1)) {
        context_.fail("label sizes ", known, " and ", size, " differ in '", term, "'");
      }
      known = size;
      plan_.strides.back()[label] += strides[axis];
    }
  }

  const KernelBuildContext& context_;
  EinsumPlan plan_;
  std::map<char, int> letters_;
  int64_t ellipsis_ = 0;
};

// Sets the values of `labels` to the multi-index of `flat` over their sizes.
void assignLabels(const EinsumPlan& plan, const std::vector<int>& labels, int64_t flat, std::vector<int64_t>& values) {
  for (size_t i = labels.size(); i-- > 0;) {
    const int64_t size = plan.sizes[labels[i]];
    values[labels[i]] = flat % size;
    flat /= size;
  }
}

int64_t countOf(const EinsumPlan& plan, const std::vector<int>& labels) {
  int64_t count = 1;
  for (int label : labels) count *= plan.sizes[label];
  return count;
}

// Y[output labels] = sum over the summed labels of the product of every operand's element.
template <typename S>
void einsum(const EinsumPlan& plan, const KernelArgs& args) {
  S* y = static_cast<S*>(args.outputs[0]);
  std::vector<int64_t> values(plan.sizes.size(), 0);
  const int64_t outputs = countOf(plan, plan.output), terms = countOf(plan, plan.summed);
  for (int64_t o = 0; o < outputs; ++o) {
    assignLabels(plan, plan.output, o, values);
    Accumulator<S> sum = 0;
    for (int64_t t = 0; t < terms; ++t) {
      assignLabels(plan, plan.summed, t, values);
      Accumulator<S> product = 1;
      for (size_t operand = 0; operand < plan.strides.size(); ++operand) {
        int64_t offset = 0;
        for (size_t label = 0; label < values.size(); ++label) offset += values[label] * plan.strides[operand][label];
        product *= static_cast<Accumulator<S>>(static_cast<const S*>(args.inputs[operand])[offset]);
      }
      sum += product;
    }
    y[o] = static_cast<S>(sum);
  }
}

std::unique_ptr<Kernel> makeEinsum(const KernelBuildContext& context) {
  if (!takesAllDTypes(context)) return nullptr;
  const EinsumPlan plan = EinsumParser(context).parse();
  return dispatch(ReferenceDTypes{}, context.output(0).dtype, [&](auto type) {
    using S = StorageOf<decltype(type)>;
    return makeKernel(context, [=](const KernelArgs& args) { einsum<S>(plan, args); });
  });
}

}  // namespace

void registerMatMulKernels(KernelRegistry& registry) {
  registry.add("MatMul", "", makeMatMul);
  registry.add("Gemm", "", makeGemm);
  registry.add("Einsum", "", makeEinsum);
}

}  // namespace estuary::ge::reference
