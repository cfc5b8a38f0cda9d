#pragma once
// Passes: named graph transformations with declared, typed options.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "estuary/ir/graph.h"

namespace estuary {

class OpRegistry;

// An option value as written in a pipeline YAML file or on the command line.
using OptionValue = std::variant<bool, int64_t, double, std::string, std::vector<std::string>>;
using OptionMap = std::map<std::string, OptionValue, std::less<>>;

struct OptionSpec {
  enum class Kind : uint8_t { Bool, Int, Float, String, StringList };
  std::string name;
  Kind kind;
  OptionValue default_value;
  std::string help;
  // A String or StringList of file paths. A pipeline file's relative paths are resolved
  // against the file's directory (Pipeline::base_dir) when the pipeline is read; pass
  // lists and options set in code are left as written (relative to the working directory).
  bool is_path = false;
};

// "bool", "int", "float", "string", "list of strings".
std::string_view optionKindName(OptionSpec::Kind kind);
// The same with an article, for messages: "a bool", "an int", "a list of strings".
std::string optionKindPhrase(OptionSpec::Kind kind);
// The kind a value holds.
OptionSpec::Kind optionValueKind(const OptionValue& value);
// Converts option text (a YAML scalar, a command-line value) to `kind`. A StringList is
// written "[a, b]" or "a,b". Returns false on text that is not of that kind.
bool parseOptionValue(OptionSpec::Kind kind, std::string_view text, OptionValue& out);
// "true", "3", "0.5", "abc", "[a, b]".
std::string formatOptionValue(const OptionValue& value);

// Options handed to a pass factory: every declared option is present, with its default
// when the pipeline did not set it.
class PassOptions {
 public:
  bool getBool(std::string_view name) const;
  int64_t getInt(std::string_view name) const;
  double getFloat(std::string_view name) const;
  const std::string& getString(std::string_view name) const;
  const std::vector<std::string>& getStringList(std::string_view name) const;
  void set(std::string name, OptionValue value) { values_[std::move(name)] = std::move(value); }
  const OptionMap& values() const { return values_; }

 private:
  const OptionValue& get(std::string_view name) const;
  OptionMap values_;
};

// What a pass reports back to the pass manager.
struct PassResult {
  // How many rewrites the pass made (nodes erased, fused, folded, ...). Zero means the
  // graph is unchanged.
  int64_t changes = 0;
  bool changed() const { return changes > 0; }
};

// Shared state a pass run can use.
struct PassContext {
  const OpRegistry* ops = nullptr;
  // Set in debug runs; passes may do extra checking.
  bool debug = false;
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual PassResult run(Graph& graph, PassContext& context) = 0;
};

struct PassInfo {
  std::string name;
  std::string description;
  std::vector<OptionSpec> options;
  std::function<std::unique_ptr<Pass>(const PassOptions&)> factory;

  // Raises an Error unless the pass has a name and a factory, every option's default is of
  // the option's kind, and only String and StringList options are paths.
  void check() const;
  const OptionSpec* findOption(std::string_view option) const;
  // "its options are: max_iterations (int), disable (list of strings)" or "it takes no
  // options": the tail of unknown-option messages.
  std::string describeOptions() const;
};

class PassRegistry {
 public:
  // The process-wide registry holding the core passes; plugins add to it.
  static PassRegistry& global();

  // Raises an Error when `info.name` is taken. `keep_alive` (a loaded plugin) stays
  // alive as long as any pass made by this entry does.
  void add(PassInfo info, std::shared_ptr<const void> keep_alive = nullptr);
  const PassInfo* find(std::string_view name) const;
  // Like find(), but an unknown name raises an Error listing the closest registered names.
  const PassInfo& get(std::string_view name) const;
  std::vector<const PassInfo*> all() const;  // sorted by name

  // Checks the option names and kinds against the declaration (an Error names the pass,
  // the option and the expected kind), fills defaults, and creates the pass. An int is
  // accepted for a float option. The returned pass keeps its plugin loaded.
  std::shared_ptr<Pass> create(std::string_view name, const OptionMap& options) const;

 private:
  struct Entry {
    // First, so it is destroyed last: the factory may be plugin code.
    std::shared_ptr<const void> keep_alive;
    PassInfo info;
  };
  std::map<std::string, Entry, std::less<>> entries_;
};

// Names from `candidates` close to `name` (by edit distance), best first: for "did you
// mean" hints in error messages.
std::vector<std::string> closeNames(std::string_view name,
                                    const std::vector<std::string>& candidates);

}  // namespace estuary
