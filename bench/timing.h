#pragma once
// Timing shared by the C++ benchmarks.
#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace estuary::bench {

// Median seconds per call of `call` after 3 warm-up calls, timed for at least `seconds`
// and at least 5 calls.
inline double medianSeconds(const std::function<void()>& call, double seconds) {
  using Clock = std::chrono::steady_clock;
  for (int i = 0; i < 3; ++i) call();
  std::vector<double> samples;
  auto start = Clock::now();
  while (std::chrono::duration<double>(Clock::now() - start).count() < seconds || samples.size() < 5) {
    auto before = Clock::now();
    call();
    samples.push_back(std::chrono::duration<double>(Clock::now() - before).count());
  }
  std::nth_element(samples.begin(), samples.begin() + samples.size() / 2, samples.end());
  return samples[samples.size() / 2];
}

}  // namespace estuary::bench
