// The rate at which this machine multiplies and adds f32 values: fused multiply-adds on the
// widest vectors the build targets (-march of Estuary's kernels), with enough independent
// chains to fill every FMA unit, from 1 thread and from all. It is the bar for
// compute-bound runs: a product of large matrices can go no faster than this, in any engine.
//
//   build/bin/fma_probe                      1 and all threads
//   build/bin/fma_probe --threads 2 --repeats 9 --json
//
// Each figure is the median over the repeats of flops (2 a lane per FMA) / seconds.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "probe_options.h"

namespace {

#if defined(__AVX512F__)
constexpr int kLanes = 16;
#elif defined(__AVX__)
constexpr int kLanes = 8;
#else
constexpr int kLanes = 4;
#endif
using Vec = float __attribute__((vector_size(kLanes * sizeof(float))));

// Chains in flight per thread: FMA latency (4-5 cycles) x 2 units, and a few more, within the
// 16 vector registers of AVX2.
constexpr int kChains = 12;
constexpr long kSteps = 20'000'000;

float fmaChains(float seed) {
  Vec acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = Vec{} + seed * static_cast<float>(c + 1);
  const Vec scale = Vec{} + 0.999999f, shift = Vec{} + 1e-7f;
  for (long step = 0; step < kSteps; ++step) {
    for (int c = 0; c < kChains; ++c) acc[c] = acc[c] * scale + shift;
  }
  float total = 0;
  for (int c = 0; c < kChains; ++c) {
    for (int lane = 0; lane < kLanes; ++lane) total += acc[c][lane];
  }
  return total;
}

double medianGflops(int threads, int repeats, float& sink) {
  std::vector<double> rates;
  for (int r = 0; r <= repeats; ++r) {  // the first pass warms the threads and the clocks
    auto started = std::chrono::steady_clock::now();
    float total = 0;
#pragma omp parallel num_threads(threads) reduction(+ : total)
    total += fmaChains(static_cast<float>(omp_get_thread_num() + 1));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    sink += total;
    if (r > 0) rates.push_back(2.0 * kLanes * kChains * static_cast<double>(kSteps) * threads / seconds / 1e9);
  }
  std::nth_element(rates.begin(), rates.begin() + repeats / 2, rates.end());
  return rates[repeats / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<ProbeOptions> options = parseProbeOptions(argc, argv, 5, 0);
  if (!options) return 2;
  float sink = 0;
  for (int threads : options->thread_counts) {
    const double rate = medianGflops(threads, options->repeats, sink);
    if (options->json) {
      std::printf("{\"threads\": %d, \"lanes\": %d, \"gflops\": %.1f}\n", threads, kLanes, rate);
    } else {
      std::printf("f32 FMA on %d-lane vectors, %d thread%s: %.1f GFLOP/s\n", kLanes, threads, threads == 1 ? "" : "s",
                  rate);
    }
  }
  return sink == 42 ? 1 : 0;  // keeps the sums alive
}
