#include "estuary/rewrite/pattern_file.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <set>
#include <sstream>

#include "estuary/rewrite/graph_pattern.h"
#include "estuary/support/error.h"
#include "estuary/text/parser.h"

namespace estuary {

namespace {

class Reader {
 public:
  Reader(std::string_view text, const std::string& source) : text_(text), source_(source) {}

  template <typename... Parts>
  [[noreturn]] void fail(const YAML::Node& node, const Parts&... parts) const {
    raise(source_, ":", node.Mark().line + 1, ": ", parts...);
  }

  std::string origin(const YAML::Node& node) const {
    return source_ + ":" + std::to_string(node.Mark().line + 1);
  }

  std::string scalar(const YAML::Node& node, const char* what) const {
    if (!node.IsScalar()) fail(node, what, " must be a single value");
    return node.Scalar();
  }

  int64_t integer(const YAML::Node& node, const char* what) const {
    std::string text = scalar(node, what);
    try {
      size_t used = 0;
      long long value = std::stoll(text, &used);
      if (used == text.size()) return value;
    } catch (const std::exception&) {
    }
    fail(node, what, " must be an integer, got '", text, "'");
  }

  // A scalar or a list of scalars.
  template <typename T, typename Convert>
  std::vector<T> list(const YAML::Node& node, Convert convert) const {
    std::vector<T> values;
    if (node.IsSequence()) {
      for (const YAML::Node& item : node) values.push_back(convert(item));
    } else {
      values.push_back(convert(node));
    }
    return values;
  }

  std::vector<std::string> strings(const YAML::Node& node, const char* what) const {
    return list<std::string>(node, [&](const YAML::Node& item) { return scalar(item, what); });
  }
  std::vector<int64_t> integers(const YAML::Node& node, const char* what) const {
    return list<int64_t>(node, [&](const YAML::Node& item) { return integer(item, what); });
  }

  void onlyKeys(const YAML::Node& map, const char* what, std::set<std::string> allowed) const {
    if (!map.IsMap()) fail(map, what, " must be a mapping");
    for (const auto& entry : map) {
      std::string key = entry.first.Scalar();
      if (!allowed.count(key)) {
        std::string known;
        for (const std::string& name : allowed) known += (known.empty() ? "" : ", ") + name;
        fail(entry.first, "unknown key '", key, "' in ", what, "; expected one of: ", known);
      }
    }
  }

  // Parses a graph written as a YAML string. Leading newlines put it on its own lines
  // of the file, so the parser's line numbers are the file's.
  std::shared_ptr<const Graph> graph(const YAML::Node& node, const char* what) const {
    std::string text = scalar(node, what);
    size_t pos = node.Mark().pos;
    bool block = pos < text_.size() && (text_[pos] == '|' || text_[pos] == '>');
    std::string padded(static_cast<size_t>(node.Mark().line) + (block ? 1 : 0), '\n');
    padded += text;
    return std::shared_ptr<const Graph>(parseGraph(padded, source_));
  }

 private:
  std::string_view text_;
  const std::string& source_;
};

ValueConstraint readConstraint(const Reader& reader, const std::string& value,
                               const YAML::Node& node) {
  reader.onlyKeys(node, "a value constraint", {"dtype", "rank", "static_shape", "dims"});
  ValueConstraint constraint;
  constraint.value = value;
  if (node["dtype"]) {
    for (const std::string& name : reader.strings(node["dtype"], "'dtype'")) {
      std::optional<DType> dtype = parseDType(name);
      if (!dtype || *dtype == DType::Undefined) {
        reader.fail(node["dtype"], "unknown dtype '", name, "' (f32, f16, bf16, f64, i8, i16, i32, i64, u8, bool)");
      }
      constraint.dtypes.push_back(*dtype);
    }
  }
  if (node["rank"]) constraint.ranks = reader.integers(node["rank"], "'rank'");
  if (node["static_shape"]) {
    std::string text = reader.scalar(node["static_shape"], "'static_shape'");
    if (text != "true" && text != "false") reader.fail(node["static_shape"], "'static_shape' must be true or false");
    constraint.static_shape = text == "true";
  }
  if (node["dims"]) {
    const YAML::Node& dims = node["dims"];
    if (!dims.IsSequence()) reader.fail(dims, "'dims' must be a list of {axis, in, multiple_of}");
    for (const YAML::Node& dim : dims) {
      reader.onlyKeys(dim, "a 'dims' entry", {"axis", "in", "multiple_of"});
      ValueConstraint::DimRule rule;
      if (dim["axis"]) rule.axis = reader.integer(dim["axis"], "'axis'");
      if (dim["in"]) rule.in = reader.integers(dim["in"], "'in'");
      if (dim["multiple_of"]) {
        rule.multiple_of = reader.integer(dim["multiple_of"], "'multiple_of'");
        if (rule.multiple_of <= 0) reader.fail(dim["multiple_of"], "'multiple_of' must be positive");
      }
      if (rule.in.empty() && rule.multiple_of == 0) {
        reader.fail(dim, "a 'dims' entry needs 'in' or 'multiple_of'");
      }
      constraint.dims.push_back(std::move(rule));
    }
  }
  return constraint;
}

Pattern readPattern(const Reader& reader, const YAML::Node& node) {
  reader.onlyKeys(node, "a pattern",
                  {"name", "match", "replace", "shared", "where", "copy_attributes", "benefit"});
  GraphPatternSpec spec;
  spec.origin = reader.origin(node);
  if (!node["name"]) reader.fail(node, "a pattern needs a 'name'");
  spec.name = reader.scalar(node["name"], "'name'");
  if (!node["match"]) reader.fail(node, "pattern '", spec.name, "' needs a 'match' graph");
  if (!node["replace"]) reader.fail(node, "pattern '", spec.name, "' needs a 'replace' graph");
  spec.match = reader.graph(node["match"], "'match'");
  spec.replace = reader.graph(node["replace"], "'replace'");
  if (node["shared"]) spec.shared = reader.strings(node["shared"], "'shared'");
  if (node["benefit"]) spec.benefit = static_cast<int>(reader.integer(node["benefit"], "'benefit'"));
  if (node["where"]) {
    const YAML::Node& where = node["where"];
    if (!where.IsMap()) reader.fail(where, "'where' must map value names to constraints");
    for (const auto& entry : where) {
      spec.constraints.push_back(readConstraint(reader, entry.first.Scalar(), entry.second));
    }
  }
  if (node["copy_attributes"]) {
    const YAML::Node& copies = node["copy_attributes"];
    if (!copies.IsSequence()) reader.fail(copies, "'copy_attributes' must be a list of {from, to, names}");
    for (const YAML::Node& copy : copies) {
      reader.onlyKeys(copy, "a 'copy_attributes' entry", {"from", "to", "names"});
      if (!copy["from"] || !copy["to"] || !copy["names"]) {
        reader.fail(copy, "a 'copy_attributes' entry needs 'from', 'to' and 'names'");
      }
      spec.copy_attributes.push_back(AttributeCopy{reader.scalar(copy["from"], "'from'"),
                                                   reader.scalar(copy["to"], "'to'"),
                                                   reader.strings(copy["names"], "'names'")});
    }
  }
  return patternFromGraphs(spec);
}

}  // namespace

PatternSet parsePatternYaml(std::string_view yaml, const std::string& source_name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& error) {
    raise(source_name, ":", error.mark.line + 1, ":", error.mark.column + 1, ": ", error.msg);
  }
  Reader reader(yaml, source_name);
  if (!root.IsMap() || !root["patterns"]) {
    raise(source_name, ": a pattern file is a mapping with a 'patterns' list");
  }
  reader.onlyKeys(root, "the pattern file", {"patterns"});
  const YAML::Node& list = root["patterns"];
  if (!list.IsSequence()) reader.fail(list, "'patterns' must be a list");
  PatternSet patterns;
  std::set<std::string> names;
  for (const YAML::Node& node : list) {
    Pattern pattern = readPattern(reader, node);
    if (!names.insert(pattern.name()).second) {
      reader.fail(node, "a second pattern is named '", pattern.name(), "'");
    }
    patterns.add(std::move(pattern));
  }
  return patterns;
}

PatternSet loadPatternFile(const std::string& path) {
  std::ifstream file(path);
  if (!file) raise("cannot read pattern file '", path, "'");
  std::stringstream text;
  text << file.rdbuf();
  return parsePatternYaml(text.str(), path);
}

}  // namespace estuary
