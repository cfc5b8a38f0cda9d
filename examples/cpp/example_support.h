#pragma once
// What the examples share: seeded random weights and the comparison with their references.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

namespace example {

inline std::vector<float> randomValues(size_t count, float scale, std::mt19937& random) {
  std::normal_distribution<float> normal(0.0f, scale);
  std::vector<float> values(count);
  for (float& value : values) value = normal(random);
  return values;
}

// Prints the largest difference and returns whether it is within `tolerance`.
inline bool matches(const char* what, const float* actual, const std::vector<float>& expected, float tolerance) {
  double worst = 0;
  for (size_t i = 0; i < expected.size(); ++i) worst = std::fmax(worst, std::fabs(actual[i] - expected[i]));
  std::printf("%s: %zu values, max |estuary - reference| = %.3g (tolerance %.0e)\n", what, expected.size(), worst,
              static_cast<double>(tolerance));
  return worst <= tolerance;
}

}  // namespace example
