// The rate at which this machine reads memory: a plain read of a buffer much larger than the
// caches, from 1 thread and from all, as the bar for memory-bound runs (a decode step streams
// every weight once, so it can go no faster than this).
//
//   build/bin/bandwidth_probe                     512 MiB (about GPT-2's f32 weights), 1 and all threads
//   build/bin/bandwidth_probe --mib 1024 --threads 2 --repeats 9 --json
//
// Each figure is the median over the repeats of bytes / seconds for one pass over the buffer.
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "probe_options.h"

namespace {

// Sums the buffer in 64-bit words with four independent accumulators, which the compiler turns
// into vector adds: one load per word and nothing else on the way.
uint64_t readAll(const uint64_t* words, size_t count, int threads) {
  uint64_t total = 0;
#pragma omp parallel for num_threads(threads) reduction(+ : total) schedule(static)
  for (size_t block = 0; block < count / 4; ++block) {
    const uint64_t* w = words + block * 4;
    total += (w[0] + w[1]) + (w[2] + w[3]);
  }
  return total;
}

double medianGbPerSecond(const std::vector<uint64_t>& buffer, int threads, int repeats, uint64_t& sink) {
  std::vector<double> rates;
  sink += readAll(buffer.data(), buffer.size(), threads);  // warm the threads and the TLB
  for (int r = 0; r < repeats; ++r) {
    auto started = std::chrono::steady_clock::now();
    sink += readAll(buffer.data(), buffer.size(), threads);
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    rates.push_back(static_cast<double>(buffer.size() * sizeof(uint64_t)) / seconds / 1e9);
  }
  std::nth_element(rates.begin(), rates.begin() + repeats / 2, rates.end());
  return rates[repeats / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const std::optional<ProbeOptions> options = parseProbeOptions(argc, argv, 7, 512);
  if (!options) return 2;
  // Filled with distinct values so that no page is shared (a zeroed buffer maps one page).
  std::vector<uint64_t> buffer((options->mib << 20) / sizeof(uint64_t));
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = i;
  uint64_t sink = 0;
  for (int threads : options->thread_counts) {
    const double rate = medianGbPerSecond(buffer, threads, options->repeats, sink);
    if (options->json) {
      std::printf("{\"threads\": %d, \"mib\": %zu, \"gb_per_s\": %.2f}\n", threads, options->mib, rate);
    } else {
      std::printf("read of %zu MiB, %d thread%s: %.1f GB/s\n", options->mib, threads, threads == 1 ? "" : "s", rate);
    }
  }
  return sink == 42 ? 1 : 0;  // keeps the sums alive
}
