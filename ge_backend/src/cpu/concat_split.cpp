// Concat and Split: along an axis, the tensor is a sequence of rows of bytes ([outer,
// axis * inner] per tensor); concatenation interleaves the inputs' row pieces, a split
// deals them out. Both are memcpy loops, parallel over rows or, when there are few rows,
// within each piece.
#include "cpu/cpu_device.h"
#include "cpu/tensor_kernels.h"

namespace estuary::ge::cpu {

namespace {

// The row pieces of the parts (Concat's inputs or Split's outputs) within one row of the
// whole tensor.
struct RowPieces {
  int64_t rows = 0;
  size_t row_bytes = 0;                 // of the whole tensor
  std::vector<size_t> piece_bytes;      // per part
  std::vector<size_t> piece_offsets;    // per part, within a row of the whole
};

RowPieces rowPieces(const KernelBuildContext& context, const TensorDesc& whole, const std::vector<TensorDesc>& parts) {
  RowPieces pieces;
  int axis = normalizedAxis(context, context.intAttr("axis"), whole.rank, "attribute 'axis'");
  pieces.rows = outerSize(whole, axis);
  size_t element_bytes = dtypeSize(whole.dtype);
  size_t inner_bytes = static_cast<size_t>(innerSize(whole, axis)) * element_bytes;
  size_t offset = 0;
  for (const TensorDesc& part : parts) {
    pieces.piece_bytes.push_back(static_cast<size_t>(part.dims[axis]) * inner_bytes);
    pieces.piece_offsets.push_back(offset);
    offset += pieces.piece_bytes.back();
  }
  pieces.row_bytes = offset;
  if (offset != static_cast<size_t>(whole.dims[axis]) * inner_bytes) {
    context.fail("the parts add up to ", offset / std::max<size_t>(inner_bytes, 1), " along axis ", axis, ", ",
                 whole.str(), " has ", whole.dims[axis]);
  }
  return pieces;
}

// Calls move(row, p, from, to) to copy bytes [from, to) of piece p of every row, split
// across the threads by rows or, when there are few rows, within each piece.
template <typename Move>
void forEachPiece(const RowPieces& pieces, int threads, const Move& move) {
  const size_t count = pieces.piece_bytes.size();
  if (pieces.rows >= 4 * threads) {
    parallelRanges(pieces.rows, static_cast<int64_t>(pieces.row_bytes), threads, [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        for (size_t p = 0; p < count; ++p) {
          if (pieces.piece_bytes[p]) move(row, p, size_t{0}, pieces.piece_bytes[p]);
        }
      }
    });
    return;
  }
  constexpr int64_t kChunk = 16 << 10;
  for (int64_t row = 0; row < pieces.rows; ++row) {
    for (size_t p = 0; p < count; ++p) {
      size_t bytes = pieces.piece_bytes[p];
      int64_t chunks = static_cast<int64_t>((bytes + kChunk - 1) / kChunk);
      parallelRanges(chunks, kChunk, threads, [&](int64_t begin, int64_t end) {
        move(row, p, static_cast<size_t>(begin * kChunk), std::min(bytes, static_cast<size_t>(end * kChunk)));
      });
    }
  }
}

class ConcatKernel final : public Kernel {
 public:
  explicit ConcatKernel(RowPieces pieces) : pieces_(std::move(pieces)) {}
  void run(const KernelArgs& args, KernelState*) const override {
    auto* whole = static_cast<std::byte*>(args.outputs[0]);
    forEachPiece(pieces_, args.num_threads, [&](int64_t row, size_t p, size_t from, size_t to) {
      const auto* part = static_cast<const std::byte*>(args.inputs[p]);
      std::memcpy(whole + static_cast<size_t>(row) * pieces_.row_bytes + pieces_.piece_offsets[p] + from,
                  part + static_cast<size_t>(row) * pieces_.piece_bytes[p] + from, to - from);
    });
  }
  std::string name() const override { return "cpu:concat"; }

 private:
  RowPieces pieces_;
};

class SplitKernel final : public Kernel {
 public:
  explicit SplitKernel(RowPieces pieces) : pieces_(std::move(pieces)) {}
  void run(const KernelArgs& args, KernelState*) const override {
    const auto* whole = static_cast<const std::byte*>(args.inputs[0]);
    forEachPiece(pieces_, args.num_threads, [&](int64_t row, size_t p, size_t from, size_t to) {
      auto* part = static_cast<std::byte*>(args.outputs[p]);
      std::memcpy(part + static_cast<size_t>(row) * pieces_.piece_bytes[p] + from,
                  whole + static_cast<size_t>(row) * pieces_.row_bytes + pieces_.piece_offsets[p] + from, to - from);
    });
  }
  std::string name() const override { return "cpu:split"; }

 private:
  RowPieces pieces_;
};

std::unique_ptr<Kernel> concat(const KernelBuildContext& context) {
  std::vector<TensorDesc> parts;
  for (size_t i = 0; i < context.numInputs(); ++i) parts.push_back(context.input(i));
  return std::make_unique<ConcatKernel>(rowPieces(context, context.output(0), parts));
}

std::unique_ptr<Kernel> split(const KernelBuildContext& context) {
  std::vector<TensorDesc> parts;
  for (size_t o = 0; o < context.numOutputs(); ++o) parts.push_back(context.output(o));
  return std::make_unique<SplitKernel>(rowPieces(context, context.input(0), parts));
}

}  // namespace

void registerConcatSplitKernels(KernelRegistry& registry) {
  registry.add("Concat", "", concat);
  registry.add("Split", "", split);
}

}  // namespace estuary::ge::cpu
