#include "cpu/winograd_conv.h"

#include <algorithm>
#include <vector>

#include "cpu/nhwc_conv_support.h"
#include "cpu/nn_support.h"
#include "estuary/ge/kernel_helpers.h"

namespace estuary::ge::cpu {

namespace {

using namespace nhwc;

// Winograd's minimal filtering F(m x m, 3x3) (Lavin and Gray, "Fast Algorithms for
// Convolutional Neural Networks"): a tile of m x m output pixels is A^T [(G g G^T) * (B^T d B)] A
// for its (m + 2) x (m + 2) input pixels d and the 3x3 kernel g, with * the element-wise
// product: (m + 2)^2 terms, each a product of input channels with output channels.
//
// F(4x4, 3x3), interpolation points 0, 1, -1, 2, -2 and infinity: 36 terms for 16 outputs,
// 4x fewer multiplications than a direct sum; its weights are 4x the kernel's.
struct F4x4 {
  static constexpr int kOutputTile = 4;
  static constexpr int kInputTile = 6;
  static constexpr const char* kName = "cpu:conv winograd 4x4 nhwc";

  // B^T d for one line of six input values.
  static void transformInput(const Vec8 (&d)[kInputTile], Vec8 (&r)[kInputTile]) {
    const Vec8 two = broadcast8(2.f), four = broadcast8(4.f), five = broadcast8(5.f);
    r[0] = four * d[0] - five * d[2] + d[4];
    r[1] = d[3] + d[4] - four * (d[1] + d[2]);
    r[2] = four * (d[1] - d[2]) + d[4] - d[3];
    r[3] = two * (d[3] - d[1]) + d[4] - d[2];
    r[4] = two * (d[1] - d[3]) + d[4] - d[2];
    r[5] = four * d[1] - five * d[3] + d[5];
  }
  // A^T m for one line of six products.
  static void transformOutput(const Vec8 (&m)[kInputTile], Vec8 (&o)[kOutputTile]) {
    const Vec8 sum12 = m[1] + m[2], difference12 = m[1] - m[2], sum34 = m[3] + m[4], difference34 = m[3] - m[4];
    o[0] = m[0] + sum12 + sum34;
    o[1] = difference12 + broadcast8(2.f) * difference34;
    o[2] = sum12 + broadcast8(4.f) * sum34;
    o[3] = difference12 + broadcast8(8.f) * difference34 + m[5];
  }
  // G g for one line of three kernel values, in double: the weights are transformed once.
  static void transformKernel(const double (&g)[3], double (&u)[kInputTile]) {
    u[0] = g[0] / 4;
    u[1] = -(g[0] + g[1] + g[2]) / 6;
    u[2] = -(g[0] - g[1] + g[2]) / 6;
    u[3] = g[0] / 24 + g[1] / 12 + g[2] / 6;
    u[4] = g[0] / 24 - g[1] / 12 + g[2] / 6;
    u[5] = g[2];
  }
};

// F(2x2, 3x3), points 0, 1, -1 and infinity: 16 terms for 4 outputs, 2.25x fewer
// multiplications, and weights only 16/9 of the kernel's. It wins where the weights do not
// stay in cache and few tiles share them (ResNet's 7x7 layers at batch 1).
struct F2x2 {
  static constexpr int kOutputTile = 2;
  static constexpr int kInputTile = 4;
  static constexpr const char* kName = "cpu:conv winograd 2x2 nhwc";

  static void transformInput(const Vec8 (&d)[kInputTile], Vec8 (&r)[kInputTile]) {
    r[0] = d[0] - d[2];
    r[1] = d[1] + d[2];
    r[2] = d[2] - d[1];
    r[3] = d[1] - d[3];
  }
  static void transformOutput(const Vec8 (&m)[kInputTile], Vec8 (&o)[kOutputTile]) {
    o[0] = m[0] + m[1] + m[2];
    o[1] = m[1] - m[2] - m[3];
  }
  static void transformKernel(const double (&g)[3], double (&u)[kInputTile]) {
    u[0] = g[0];
    u[1] = (g[0] + g[1] + g[2]) / 2;
    u[2] = (g[0] - g[1] + g[2]) / 2;
    u[3] = g[2];
  }
};

// The most tiles an item multiplies: enough rows for the products to reuse each block of
// weights, few enough that its products stay near in cache.
constexpr int64_t kChunkTiles = 48;
// The fewest tiles an item transforms for itself: two of the micro-kernel's rows.
constexpr int64_t kLeastChunkTiles = 2 * kTileRows;
// The most bytes of transformed input shared by all items at a time (a span of tiles).
constexpr int64_t kSpanBytes = int64_t{4} << 20;

// ONNX's [O, C, 3, 3] weights as G g G^T, packed for the products: [term][O / 16][C][16].
template <typename F>
std::vector<float> transformWeights(const DirectConvShape& s, const float* weights) {
  constexpr int kInputTile = F::kInputTile, kTerms = kInputTile * kInputTile;
  const int64_t blocks = s.out_channels / kTileChannels;
  std::vector<float> packed(static_cast<size_t>(kTerms * s.out_channels * s.in_channels));
  for (int64_t o = 0; o < s.out_channels; ++o) {
    for (int64_t c = 0; c < s.in_channels; ++c) {
      const float* g = weights + (o * s.in_channels + c) * 9;
      double columns[kInputTile][3];  // G g: row i of the transform, kernel column j
      for (int j = 0; j < 3; ++j) {
        const double column[3] = {g[j], g[3 + j], g[6 + j]};
        double transformed[kInputTile];
        F::transformKernel(column, transformed);
        for (int i = 0; i < kInputTile; ++i) columns[i][j] = transformed[i];
      }
      for (int i = 0; i < kInputTile; ++i) {
        const double row[3] = {columns[i][0], columns[i][1], columns[i][2]};
        double transformed[kInputTile];
        F::transformKernel(row, transformed);
        for (int j = 0; j < kInputTile; ++j) {
          const int64_t term = i * kInputTile + j;
          packed[static_cast<size_t>(((term * blocks + o / kTileChannels) * s.in_channels + c) * kTileChannels +
                                     o % kTileChannels)] = static_cast<float>(transformed[j]);
        }
      }
    }
  }
  return packed;
}

// Rows [0, R) of one term's product for 16 output channels: out[r] = rows[r] x weights.
template <int R>
void multiplyRows(const float* const* rows, int64_t channels, const float* weights, float* const* out) {
  Vec8 low[R] = {}, high[R] = {};
  multiplyAccumulate<R>(rows, channels, weights, low, high);
  for (int r = 0; r < R; ++r) {
    store8(out[r], low[r]);
    store8(out[r] + 8, high[r]);
  }
}

using RowsFunction = void (*)(const float* const*, int64_t, const float*, float* const*);
constexpr RowsFunction kRowsFunctions[kTileRows + 1] = {nullptr,         multiplyRows<1>, multiplyRows<2>,
                                                        multiplyRows<3>, multiplyRows<4>, multiplyRows<5>,
                                                        multiplyRows<6>};

// A parallel item is a chunk of tiles and a group of output channels: it multiplies the
// chunk's transformed input by the group's weights term by term into its range's scratch and
// transforms the products back. Where there are tiles enough for every range, each item
// transforms its own chunk's input, which then stays in its core's cache. Where tiles are few
// (deep layers at batch 1), items split the output channels instead, so that each thread
// reads only its share of the weights, and one parallel loop first transforms the input for
// all of them, in spans of tiles whose transformed input fits kSpanBytes.
template <typename F>
class WinogradConvNhwcKernel final : public Kernel {
  static constexpr int kOutputTile = F::kOutputTile;
  static constexpr int kInputTile = F::kInputTile;
  static constexpr int kTerms = kInputTile * kInputTile;

 public:
  WinogradConvNhwcKernel(const DirectConvShape& shape, std::shared_ptr<const std::vector<float>> packed,
                         ConvOperands operands,
                         int max_threads)
      : shape_(shape), tiles_h_((shape.out_h + kOutputTile - 1) / kOutputTile),
        tiles_w_((shape.out_w + kOutputTile - 1) / kOutputTile), packed_(std::move(packed)),
        own_bias_(operands.own_bias), steps_(std::move(operands.steps)), residual_(operands.residual) {
    const int64_t tiles = shape.batch * tiles_h_ * tiles_w_;
    const int64_t blocks = shape.out_channels / kTileChannels;
    // Every range of the pool one item at least, so that a thread held up hands its items to
    // the others.
    const int64_t wanted = max_threads > 1 ? maxParallelRanges(max_threads) : 1;
    int64_t chunks = (tiles + kChunkTiles - 1) / kChunkTiles;
    own_input_ = tiles >= wanted * kLeastChunkTiles;
    if (own_input_) {
      span_tiles_ = tiles;
      groups_ = 1;
      group_blocks_ = blocks;
      chunks = std::max(chunks, wanted);
    } else {
      const int64_t tile_bytes = kTerms * shape.in_channels * static_cast<int64_t>(sizeof(float));
      const int64_t most_span_tiles = std::max<int64_t>(1, kSpanBytes / tile_bytes);
      const int64_t spans = (tiles + most_span_tiles - 1) / most_span_tiles;
      span_tiles_ = (tiles + spans - 1) / spans;
      chunks = (span_tiles_ + kChunkTiles - 1) / kChunkTiles;
      const int64_t groups = std::min(blocks, (wanted + chunks - 1) / chunks);
      group_blocks_ = (blocks + groups - 1) / groups;
      groups_ = (blocks + group_blocks_ - 1) / group_blocks_;
      // No chunk under a micro-kernel's 6 rows.
      chunks = std::max(chunks, std::min((span_tiles_ + kTileRows - 1) / kTileRows, (wanted + groups_ - 1) / groups_));
    }
    chunk_tiles_ = (span_tiles_ + chunks - 1) / chunks;
    chunks = (span_tiles_ + chunk_tiles_ - 1) / chunk_tiles_;
    ranges_ = std::min(chunks * groups_, maxParallelRanges(max_threads));
  }

  std::string name() const override { return F::kName; }
  // A residual element is read by the one tile that writes the same element, just before.
  std::optional<size_t> inPlaceInput(size_t output) const override {
    return output == 0 ? residual_ : std::nullopt;
  }
  size_t scratchBytes() const override {
    return static_cast<size_t>(sharedFloats() + ranges_ * rangeFloats()) * sizeof(float);
  }

  void run(const KernelArgs& args, KernelState*) const override {
    const DirectConvShape& s = shape_;
    const int64_t tiles = s.batch * tiles_h_ * tiles_w_;
    auto* shared = static_cast<float*>(args.scratch);  // the span's transformed input: [term][tile][C]
    const double cost_per_item =
        0.25 * static_cast<double>(kTerms * chunk_tiles_ * s.in_channels * group_blocks_ * kTileChannels);
    for (int64_t span = 0; span < tiles; span += span_tiles_) {
      const int64_t span_count = std::min(span_tiles_, tiles - span);
      if (!own_input_) {
        parallelFor(span_count, 4.0 * kTerms * s.in_channels, args.num_threads, [&](int64_t begin, int64_t end) {
          for (int64_t slot = begin; slot < end; ++slot) {
            transformInputTile(args, span + slot, shared + slot * s.in_channels, span_tiles_ * s.in_channels);
          }
        });
      }
      const int64_t chunks = (span_count + chunk_tiles_ - 1) / chunk_tiles_;
      auto multiplyItems = [&](int64_t range, int64_t begin, int64_t end) {
        // [term][tile of the chunk][C] with own input, then [term][tile of the chunk][group's channels]
        float* own = shared + sharedFloats() + range * rangeFloats();
        float* products = own_input_ ? own + kTerms * chunk_tiles_ * s.in_channels : own;
        for (int64_t item = begin; item < end; ++item) {
          const int64_t first = item / groups_ * chunk_tiles_, group = item % groups_;
          const int64_t count = std::min(chunk_tiles_, span_count - first);
          const float* transformed = shared + first * s.in_channels;
          int64_t term_stride = span_tiles_ * s.in_channels;
          if (own_input_) {
            transformed = own;
            term_stride = chunk_tiles_ * s.in_channels;
            for (int64_t tile = 0; tile < count; ++tile) {
              transformInputTile(args, span + first + tile, own + tile * s.in_channels, term_stride);
            }
          }
          const int64_t first_block = group * group_blocks_;
          const int64_t blocks = std::min(group_blocks_, s.out_channels / kTileChannels - first_block);
          for (int64_t term = 0; term < kTerms; ++term) {
            for (int64_t block = 0; block < blocks; ++block) {
              multiplyTerm(term, first_block + block, block, count, transformed + term * term_stride, products);
            }
          }
          for (int64_t tile = 0; tile < count; ++tile) {
            transformOutputTile(args, span + first + tile, tile, products, first_block * kTileChannels,
                                blocks * kTileChannels);
          }
        }
      };
      parallelForRanges(chunks * groups_, cost_per_item, args.num_threads, multiplyItems);
    }
  }

 private:
  int64_t productFloats() const { return kTerms * chunk_tiles_ * group_blocks_ * kTileChannels; }
  int64_t sharedFloats() const { return own_input_ ? 0 : kTerms * span_tiles_ * shape_.in_channels; }
  int64_t rangeFloats() const {
    return productFloats() + (own_input_ ? kTerms * chunk_tiles_ * shape_.in_channels : 0);
  }

  struct TileOrigin {
    int64_t image, row, column;  // of its first output pixel
  };
  TileOrigin origin(int64_t tile) const {
    const int64_t per_image = tiles_h_ * tiles_w_;
    const int64_t in_image = tile % per_image;
    return {tile / per_image, in_image / tiles_w_ * kOutputTile, in_image % tiles_w_ * kOutputTile};
  }

  // to[term * term_stride + c] = (B^T d B)[term] for the input pixels of `tile`; pixels in
  // the padding or past the image are zeros.
  void transformInputTile(const KernelArgs& args, int64_t tile, float* to, int64_t term_stride) const {
    const DirectConvShape& s = shape_;
    const TileOrigin at = origin(tile);
    const auto* image = static_cast<const float*>(args.inputs[0]) + at.image * s.in_h * s.in_w * s.in_channels;
    const float* pixels[kInputTile][kInputTile];
    for (int i = 0; i < kInputTile; ++i) {
      for (int j = 0; j < kInputTile; ++j) {
        const int64_t h = at.row - s.pad_top + i, w = at.column - s.pad_left + j;
        pixels[i][j] = h >= 0 && h < s.in_h && w >= 0 && w < s.in_w ? image + (h * s.in_w + w) * s.in_channels
                                                                     : nullptr;
      }
    }
    for (int64_t c = 0; c < s.in_channels; c += 8) {
      Vec8 columns[kInputTile][kInputTile];  // B^T d: row i of the transform, input column j
      for (int j = 0; j < kInputTile; ++j) {
        Vec8 column[kInputTile], result[kInputTile];
        for (int i = 0; i < kInputTile; ++i) column[i] = pixels[i][j] ? load8(pixels[i][j] + c) : Vec8{};
        F::transformInput(column, result);
        for (int i = 0; i < kInputTile; ++i) columns[i][j] = result[i];
      }
      for (int i = 0; i < kInputTile; ++i) {
        Vec8 result[kInputTile];
        F::transformInput(columns[i], result);
        for (int j = 0; j < kInputTile; ++j) store8(to + (i * kInputTile + j) * term_stride + c, result[j]);
      }
    }
  }

  // products[term][tile][block's 16 channels] = rows[tile][C] x the term's weights of output
  // channel block `weight_block`, for `count` tiles.
  void multiplyTerm(int64_t term, int64_t weight_block, int64_t block, int64_t count, const float* rows,
                    float* products) const {
    const DirectConvShape& s = shape_;
    const int64_t width = group_blocks_ * kTileChannels;
    const float* weights =
        packed_->data() + (term * (s.out_channels / kTileChannels) + weight_block) * s.in_channels * kTileChannels;
    float* term_products = products + term * chunk_tiles_ * width + block * kTileChannels;
    for (int64_t row = 0; row < count; row += kTileRows) {
      const int tile_rows = static_cast<int>(std::min<int64_t>(kTileRows, count - row));
      const float* in[kTileRows];
      float* out[kTileRows];
      for (int r = 0; r < tile_rows; ++r) {
        in[r] = rows + (row + r) * s.in_channels;
        out[r] = term_products + (row + r) * width;
      }
      kRowsFunctions[tile_rows](in, s.in_channels, weights, out);
    }
  }

  // Output channels [channel, channel + count) of the pixels of `tile` inside the image:
  // A^T m A, then the bias and the epilogue.
  void transformOutputTile(const KernelArgs& args, int64_t tile, int64_t slot, const float* products, int64_t channel,
                           int64_t count) const {
    const DirectConvShape& s = shape_;
    const TileOrigin at = origin(tile);
    const int rows = static_cast<int>(std::min<int64_t>(kOutputTile, s.out_h - at.row));
    const int columns = static_cast<int>(std::min<int64_t>(kOutputTile, s.out_w - at.column));
    const float* bias = own_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    auto* y = static_cast<float*>(args.outputs[0]);
    const int64_t width = group_blocks_ * kTileChannels;
    const int64_t term_stride = chunk_tiles_ * width;
    for (int64_t offset = 0; offset < count; offset += 8) {
      const int64_t k = channel + offset;
      const float* from = products + slot * width + offset;
      Vec8 partial[kOutputTile][kInputTile];  // A^T m: row i of the transform, column j of the terms
      for (int j = 0; j < kInputTile; ++j) {
        Vec8 column[kInputTile], result[kOutputTile];
        for (int i = 0; i < kInputTile; ++i) column[i] = load8(from + (i * kInputTile + j) * term_stride);
        F::transformOutput(column, result);
        for (int i = 0; i < kOutputTile; ++i) partial[i][j] = result[i];
      }
      const Vec8 shift = bias ? load8(bias + k) : Vec8{};
      for (int i = 0; i < rows; ++i) {
        Vec8 result[kOutputTile];
        F::transformOutput(partial[i], result);
        for (int j = 0; j < columns; ++j) {
          const int64_t pixel = (at.image * s.out_h + at.row + i) * s.out_w + at.column + j;
          store8(y + pixel * s.out_channels + k,
                 applyEpilogue(steps_, args.inputs, pixel, k, s.out_channels, result[j] + shift));
        }
      }
    }
  }

  DirectConvShape shape_;
  int64_t tiles_h_, tiles_w_;
  bool own_input_ = false;                 // each item transforms its own chunk's input
  int64_t span_tiles_ = 0;                 // of the batch's tiles
  int64_t chunk_tiles_ = 0;                // of a span's tiles
  int64_t groups_ = 0, group_blocks_ = 0;  // of the output channels' blocks of 16
  int64_t ranges_ = 0;                     // parallel ranges with their own scratch for products
  std::shared_ptr<const std::vector<float>> packed_;  // [term][out_channels / 16][in_channels][16]
  bool own_bias_;
  std::vector<Step> steps_;
  std::optional<size_t> residual_;
};

template <typename F>
std::unique_ptr<Kernel> makeWinogradConvNhwc(const KernelBuildContext& context, const DirectConvShape& shape,
                                             const Epilogue& epilogue) {
  if (!winogradConvNhwcApplies(shape)) return nullptr;
  std::optional<ConvOperands> operands = nhwcConvOperands(context, shape.out_channels, epilogue);
  if (!operands) return nullptr;
  const Tensor& weights = *operands->weights;
  auto packed = packedWeights(context, weights, F::kName, [&] {
    return transformWeights<F>(shape, static_cast<const float*>(weights.data()));
  });
  return std::make_unique<WinogradConvNhwcKernel<F>>(shape, std::move(packed), std::move(*operands),
                                                     context.maxThreads());
}

}  // namespace

bool winogradConvNhwcApplies(const DirectConvShape& shape) {
  return shape.kernel_h == 3 && shape.kernel_w == 3 && shape.stride_h == 1 && shape.stride_w == 1 &&
         shape.in_channels % 8 == 0 && shape.out_channels % kTileChannels == 0;
}

std::vector<KernelTactic> winogradConvNhwcTactics(const KernelBuildContext& context, const DirectConvShape& shape,
                                                  const Epilogue& epilogue) {
  if (!winogradConvNhwcApplies(shape)) return {};
  std::vector<KernelTactic> tactics = {
      {F4x4::kName, [&context, &epilogue, shape] { return makeWinogradConvNhwc<F4x4>(context, shape, epilogue); }},
      {F2x2::kName, [&context, &epilogue, shape] { return makeWinogradConvNhwc<F2x2>(context, shape, epilogue); }}};
  constexpr int64_t kMinTilesForF4x4 = 16;
  const int64_t tiles = ((shape.out_h + 3) / 4) * ((shape.out_w + 3) / 4);
  if (tiles < kMinTilesForF4x4) std::swap(tactics[0], tactics[1]);
  return tactics;
}

}  // namespace estuary::ge::cpu
