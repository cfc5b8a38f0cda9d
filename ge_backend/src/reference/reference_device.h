#pragma once
// The reference device: plain, obviously correct kernels for every core op, one loop per op
// in the words of the ONNX specification, computing in f64 (integers exactly), on one thread.
// It has no lowering (no fusions, no layouts), so a model runs on it as translated; the tests
// use it as their oracle, and accuracy comparison as the run to measure a model against.
//
// It is built from the device boundary alone (estuary/ge/device.h, kernel.h,
// kernel_helpers.h): nothing of the CPU device.
#include "estuary/ge/device.h"

namespace estuary::ge {

const Device& referenceDevice();

}  // namespace estuary::ge
