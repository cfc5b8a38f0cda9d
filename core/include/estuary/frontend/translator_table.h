#pragma once
// Translator tables and conversion extensions.
//
// A frontend's translations are free functions in a table keyed by (domain, op type) and a
// version range: ONNX ops by opset, TensorFlow ops by name, Paddle's PIR and legacy op names
// side by side. A translator reads its node through a NodeContext and returns the node's
// results, one value per output of the node (a trailing output it does not produce may be
// left off if the model never uses it).
//
// Users add or override the translation of an op without changing Estuary: a conversion
// extension names the frontend and the op and brings a translator. Plugins register them
// (PluginRegistrar::addConversion, so a plugin named in a pipeline YAML or with --plugin
// brings its ops' translations), and Python passes functions to estuary.convert and
// estuary.Model. Extensions are asked before the frontend's own table.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace estuary {

class NodeContext;
class Value;

using TranslateFn = std::function<std::vector<Value*>(NodeContext&)>;

inline constexpr int64_t kAnyVersion = std::numeric_limits<int64_t>::max();

class TranslatorTable {
 public:
  // A table filled by a frontend's op files, made once and never destroyed (plugins may be
  // unloaded in any order at exit):
  //   static const TranslatorTable& table = TranslatorTable::filledBy({addNnTranslators, ...});
  static const TranslatorTable& filledBy(std::initializer_list<void (*)(TranslatorTable&)> fills);

  // The translation of `op_type` of `domain` for versions [since, until].
  TranslatorTable& add(std::string_view domain, std::string_view op_type, TranslateFn translate, int64_t since = 0,
                       int64_t until = kAnyVersion);
  // The same in the default domain.
  TranslatorTable& add(std::string_view op_type, TranslateFn translate, int64_t since = 0,
                       int64_t until = kAnyVersion) {
    return add("", op_type, std::move(translate), since, until);
  }

  // The translator of the op at `version`, or nullptr.
  const TranslateFn* find(std::string_view domain, std::string_view op_type, int64_t version) const;
  // "Add", "domain::Op", sorted.
  std::vector<std::string> ops() const;

 private:
  struct Entry {
    int64_t since;
    int64_t until;
    TranslateFn translate;
  };
  const std::vector<Entry>* entriesOf(std::string_view domain, std::string_view op_type) const;
  // By domain, then op type: found without building a key.
  std::map<std::string, std::map<std::string, std::vector<Entry>, std::less<>>, std::less<>> entries_;
};

struct ConversionExtension {
  std::string frontend;  // "onnx", "pytorch", ...; empty: every frontend
  std::string domain;    // the op's domain ("" for the framework's default)
  std::string op_type;   // "MyOp", "mylib.custom_gelu.default"
  TranslateFn translate;
  // Who brought it, for errors: "plugin 'my_ops' (/path/libestuary_my_ops.so)",
  // "Python function my_gelu".
  std::string origin;
};

// Extensions by frontend and op. The global registry holds what plugins register; a load's
// own extensions (FrontendOptions::extensions) are asked first.
class ConversionExtensions {
 public:
  static ConversionExtensions& global();

  // Raises an Error when an extension for the same frontend and op is registered already.
  // `keep_alive` (a plugin) stays loaded as long as the extension is registered.
  void add(ConversionExtension extension, std::shared_ptr<const void> keep_alive = nullptr);
  // The extension for the op in `frontend` (or for every frontend), or nullptr.
  const ConversionExtension* find(std::string_view frontend, std::string_view domain, std::string_view op_type) const;
  // The extension registered for exactly this frontend (empty: every frontend) and op.
  const ConversionExtension* registered(std::string_view frontend, std::string_view domain,
                                        std::string_view op_type) const;
  // The ops extensions translate for `frontend` (those for every frontend included).
  std::vector<std::string> ops(std::string_view frontend) const;
  size_t size() const;

 private:
  struct Entry {
    std::shared_ptr<const void> keep_alive;  // first, so it is destroyed last
    ConversionExtension extension;
  };
  mutable std::mutex mutex_;
  std::deque<Entry> entries_;  // a deque: find()'s pointers stay valid as plugins add more
};

// An extension in `extensions` for the op in `frontend`, or nullptr.
const ConversionExtension* findExtension(const std::vector<ConversionExtension>& extensions,
                                         std::string_view frontend, std::string_view domain, std::string_view op_type);

}  // namespace estuary
