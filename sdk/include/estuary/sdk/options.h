#pragma once
// Build options: everything that turns a model into a compiled one, as typed fields and as a
// string map (GE's options map), so that an integration can pass its users' options through
// unchanged. The command line's flags, the Python keywords and the C API's key/value pairs
// all end up here.
//
//   sdk::BuildConfig config;
//   config.input_shapes = {{"x", {1, 3, 224, 224}}};
//   config.set("pipeline", "O3");                           // one key at a time, or
//   config = sdk::BuildConfig::fromMap({{"input_shape", "x:1~8,3,224,224"}, {"threads", "2"}});
//
// The keys are listed by BuildConfig::keys() (and in docs/sdk.md); an unknown key is an Error
// naming it and listing the known ones.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "estuary/frontend/model_input.h"
#include "estuary/ge/model.h"
#include "estuary/transforms/input_shapes.h"
#include "estuary/transforms/precision.h"

namespace estuary::sdk {

struct BuildConfig {
  // --- Translation (a framework's model) ---------------------------------------------------
  // The frontend ("onnx", "tensorflow", "paddle", "mindspore"; ATC's numbers 1, 3, 5 too);
  // empty: chosen from the model.
  std::string framework;
  // The variant, weights location, allowed folders, output names, frontend keys and
  // conversion extensions (estuary/frontend/model_input.h). Its input_shapes and
  // input_ranges are ignored: the fields below are the ones the build uses.
  FrontendOptions frontend;

  // --- Input dims --------------------------------------------------------------------------
  // Fixed before translation, so that translators see them; -1 keeps a dim as the model has
  // it. Ranges keep a dim symbolic and bound the sizes a run may give it (ATC's "1~16").
  InputShapes input_shapes;
  InputDimRanges input_ranges;

  // --- Optimization ------------------------------------------------------------------------
  // A shipped pipeline's name ("O2"), a pipeline YAML path, or a pass list (resolvePipeline).
  std::string pipeline = "O2";
  std::vector<std::string> disabled_passes;  // passes or groups switched off by name
  std::string switch_file;                   // ATC's fusion switch file: pass -> on/off
  std::vector<std::string> plugins;          // loaded before anything else: names or paths
  bool debug = false;                        // dump the IR around every pass, verify after each
  std::string dump_dir = "estuary_dump";

  // --- Precision (ATC's --precision_mode; estuary/transforms/precision.h) -------------------
  PrecisionMode precision_mode = PrecisionMode::Origin;
  std::string precision_lists;  // the mixed modes' lists; empty: configs/precision/mixed.yaml
  std::string modify_mixlist;   // ATC's edits of the lists
  std::string keep_dtype;       // ATC's file of nodes that keep their model's dtypes
  // Build a 16-bit mode even where the device has no fast kernels for it (they then convert
  // to f32 and back around every op: slower than f32, for checking accuracy; products of a
  // few rows, a decoder's step, read bf16 or f16 weights as they are and gain even there).
  bool allow_slow_precision = false;

  // --- Backend -----------------------------------------------------------------------------
  // The device to build for and run on (ge::deviceNames()): "cpu", or "reference", plain
  // kernels in f32/f64 to check results against.
  std::string device = "cpu";
  // Threads, epilogue fusion, layout, resource limits (estuary/ge/model.h). Its dim_ranges
  // are filled from input_ranges by the build.
  ge::BuildOptions backend;

  // Sets one option by its key, as fromMap() does. Raises an Error naming the key when it is
  // unknown, or the key and the value when the value is malformed.
  void set(std::string_view key, std::string_view value);
  // `options` applied over the defaults, or over `base`, in key order.
  static BuildConfig fromMap(const std::map<std::string, std::string>& options);
  static BuildConfig fromMap(const std::map<std::string, std::string>& options, BuildConfig base);

  struct Key {
    const char* name;
    const char* value;  // what the value looks like
    const char* help;
  };
  // Every key set() takes, in the order docs list them. Frontend-specific keys are given as
  // "frontend.<key>" (the frontends declare their own).
  static const std::vector<Key>& keys();
};

// Parses "x:1,3,224,224;y:-1,128;z:1~16,64" into `shapes` and `ranges` (a ranged dim is -1
// in `shapes`). Raises an Error naming the entry that is malformed or an input given twice.
void parseInputShapeSpec(std::string_view text, InputShapes& shapes, InputDimRanges& ranges);

// A whole decimal integer (blanks around it allowed), or nullopt.
std::optional<int64_t> parseInteger(std::string_view text);

// "onnx" for "5" and the other ATC framework numbers; other names as they are.
std::string frameworkName(std::string_view name_or_atc_number);

}  // namespace estuary::sdk
