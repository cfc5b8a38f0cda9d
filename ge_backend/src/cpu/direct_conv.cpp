#include "cpu/direct_conv.h"

#include <algorithm>
#include <vector>

#include "cpu/nhwc_conv_support.h"
#include "cpu/nn_support.h"
#include "estuary/ge/kernel_helpers.h"

namespace estuary::ge::cpu {

namespace {

using namespace nhwc;

constexpr int kTilePixels = kTileRows;
constexpr int64_t kTilesPerItem = 8;  // a parallel item: 48 pixels of one 16-channel block

struct TileOutput {
  float* y[kTilePixels];
  int64_t pixel[kTilePixels];  // index over the batch, for a residual of the output's layout
};

// Output channels [channel, channel + 16) of R pixels of one image: `windows[r]` lists, tap
// by tap, the input pixel pixel r reads (-1 in the padding, which reads a row of zeros);
// `weights` holds the block's taps x C x 16 values.
template <int R>
void convolveTile(const float* image, const float* zeros, const int64_t* const* windows, int64_t kernel_size,
                  int64_t channels, const float* weights, const float* initial, const TileOutput& out, int64_t channel,
                  const std::vector<Step>& steps, const void* const* inputs, int64_t out_channels) {
  Vec8 low[R], high[R];
  const Vec8 initial_low = initial ? load8(initial) : Vec8{}, initial_high = initial ? load8(initial + 8) : Vec8{};
  for (int r = 0; r < R; ++r) {
    low[r] = initial_low;
    high[r] = initial_high;
  }
  for (int64_t t = 0; t < kernel_size; ++t) {
    const float* x[R];
    for (int r = 0; r < R; ++r) x[r] = windows[r][t] < 0 ? zeros : image + windows[r][t] * channels;
    multiplyAccumulate<R>(x, channels, weights + t * channels * kTileChannels, low, high);
  }
  for (int r = 0; r < R; ++r) {
    low[r] = applyEpilogue(steps, inputs, out.pixel[r], channel, out_channels, low[r]);
    high[r] = applyEpilogue(steps, inputs, out.pixel[r], channel + 8, out_channels, high[r]);
    store8(out.y[r], low[r]);
    store8(out.y[r] + 8, high[r]);
  }
}

using TileFunction = void (*)(const float*, const float*, const int64_t* const*, int64_t, int64_t, const float*,
                              const float*, const TileOutput&, int64_t, const std::vector<Step>&, const void* const*,
                              int64_t);
constexpr TileFunction kTileFunctions[kTilePixels + 1] = {nullptr,         convolveTile<1>, convolveTile<2>,
                                                          convolveTile<3>, convolveTile<4>, convolveTile<5>,
                                                          convolveTile<6>};

class DirectConvNhwcKernel final : public Kernel {
 public:
  DirectConvNhwcKernel(const DirectConvShape& shape, std::shared_ptr<const std::vector<float>> packed, bool own_bias,
                       std::vector<Step> steps, std::optional<size_t> residual)
      : shape_(shape),
        windows_(windowTable({shape.in_h, shape.in_w}, {shape.out_h, shape.out_w}, {shape.kernel_h, shape.kernel_w},
                             {shape.stride_h, shape.stride_w}, {1, 1}, {shape.pad_top, shape.pad_left}, true)),
        packed_(std::move(packed)), zeros_(static_cast<size_t>(shape.in_channels), 0.f),
        own_bias_(own_bias), steps_(std::move(steps)), residual_(residual) {}

  std::string name() const override { return "cpu:conv direct nhwc"; }
  // A residual element is read by the one tile that writes the same element, just before.
  std::optional<size_t> inPlaceInput(size_t output) const override {
    return output == 0 ? residual_ : std::nullopt;
  }

  void run(const KernelArgs& args, KernelState*) const override {
    const DirectConvShape& s = shape_;
    const int64_t pixels = s.out_h * s.out_w;
    const int64_t tiles = (pixels + kTilePixels - 1) / kTilePixels;
    const int64_t items_per_block = (tiles + kTilesPerItem - 1) / kTilesPerItem;
    const int64_t blocks = s.out_channels / kTileChannels;
    const int64_t kernel_size = s.kernel_h * s.kernel_w;
    const double cost_per_item = 0.25 * static_cast<double>(kTilesPerItem * kTilePixels * kTileChannels *
                                                            kernel_size * s.in_channels);
    const auto* x = static_cast<const float*>(args.inputs[0]);
    auto* y = static_cast<float*>(args.outputs[0]);
    const float* bias = own_bias_ ? static_cast<const float*>(args.inputs[2]) : nullptr;
    parallelFor(s.batch * blocks * items_per_block, cost_per_item, args.num_threads, [&](int64_t begin, int64_t end) {
      for (int64_t item = begin; item < end; ++item) {
        const int64_t image = item / (blocks * items_per_block);
        const int64_t block = item / items_per_block % blocks;
        const int64_t first_tile = item % items_per_block * kTilesPerItem;
        const float* image_x = x + image * s.in_h * s.in_w * s.in_channels;
        float* image_y = y + image * pixels * s.out_channels;
        const int64_t channel = block * kTileChannels;
        for (int64_t tile = first_tile; tile < std::min(tiles, first_tile + kTilesPerItem); ++tile) {
          const int64_t first = tile * kTilePixels;
          const int count = static_cast<int>(std::min<int64_t>(kTilePixels, pixels - first));
          const int64_t* windows[kTilePixels];
          TileOutput out;
          for (int r = 0; r < count; ++r) {
            const int64_t pixel = first + r;
            windows[r] = windows_.offsets.data() + pixel * kernel_size;
            out.y[r] = image_y + pixel * s.out_channels + channel;
            out.pixel[r] = image * pixels + pixel;
          }
          kTileFunctions[count](image_x, zeros_.data(), windows, kernel_size, s.in_channels,
                                packed_->data() + channel * kernel_size * s.in_channels, bias ? bias + channel : nullptr,
                                out, channel, steps_, args.inputs, s.out_channels);
        }
      }
    });
  }

 private:
  DirectConvShape shape_;
  WindowTable windows_;        // position-major: the input pixel of each output pixel and tap, -1 in the padding
  std::shared_ptr<const std::vector<float>> packed_;  // [out_channels / 16][kernel_h * kernel_w][in_channels][16]
  std::vector<float> zeros_;   // what a tap in the padding reads
  bool own_bias_;
  std::vector<Step> steps_;
  std::optional<size_t> residual_;
};

// ONNX's [O, C, kh, kw] weights as blocks of 16 output channels, tap by tap.
std::vector<float> packWeights(const DirectConvShape& s, const float* weights) {
  const int64_t kernel_size = s.kernel_h * s.kernel_w;
  std::vector<float> packed(static_cast<size_t>(s.out_channels * s.in_channels * kernel_size));
  for (int64_t o = 0; o < s.out_channels; ++o) {
    for (int64_t c = 0; c < s.in_channels; ++c) {
      for (int64_t t = 0; t < kernel_size; ++t) {
        const int64_t block = o / kTileChannels;
        packed[static_cast<size_t>(((block * kernel_size + t) * s.in_channels + c) * kTileChannels + o % kTileChannels)] =
            weights[(o * s.in_channels + c) * kernel_size + t];
      }
    }
  }
  return packed;
}

}  // namespace

std::unique_ptr<Kernel> makeDirectConvNhwc(const KernelBuildContext& context, const DirectConvShape& shape,
                                           const Epilogue& epilogue) {
  if (shape.out_channels % kTileChannels != 0) return nullptr;
  std::optional<ConvOperands> operands = nhwcConvOperands(context, shape.out_channels, epilogue);
  if (!operands) return nullptr;
  const Tensor& weights = *operands->weights;
  auto packed = packedWeights(context, weights, "direct nhwc",
                              [&] { return packWeights(shape, static_cast<const float*>(weights.data())); });
  return std::make_unique<DirectConvNhwcKernel>(shape, std::move(packed), operands->own_bias, std::move(operands->steps),
                                                operands->residual);
}

}  // namespace estuary::ge::cpu
