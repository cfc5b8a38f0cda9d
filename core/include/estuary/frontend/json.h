#pragma once
// JSON reading for frontends whose models are JSON (Paddle's PIR programs): a document
// parsed once into a tree of views into the text, so that strings without escapes and
// numbers are not copied, and every value remembers its line for errors. Errors name the
// file, the line and the column: "m.json: line 12, column 7: expected ',' or '}' in an object".
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace estuary::json {

class Value {
 public:
  enum class Kind : uint8_t { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }
  // "a number", "an array" ...: what a message says was found.
  const char* kindName() const;
  // The line (from 1) where the value starts.
  size_t line() const { return line_; }

  // Typed access; each is only valid for its kind (check first).
  bool boolean() const { return boolean_; }
  std::string_view string() const { return text_; }
  // The number's text as written ("1e-06", "-3").
  std::string_view numberText() const { return text_; }
  // The number as an integer when it is one exactly (no fraction or exponent, in range).
  std::optional<int64_t> integer() const;
  double number() const;

  // Arrays and objects: the elements, or the members' values in file order.
  size_t size() const { return children_.size(); }
  const Value& operator[](size_t i) const { return children_[i]; }
  const std::vector<Value>& elements() const { return children_; }
  // Objects: member i's key, and the value of a key (the first of that name), or nullptr.
  std::string_view key(size_t i) const { return keys_[i]; }
  const Value* find(std::string_view key) const;

 private:
  friend class Parser;
  Kind kind_ = Kind::Null;
  bool boolean_ = false;
  size_t line_ = 0;
  std::string_view text_;
  std::vector<Value> children_;
  std::vector<std::string_view> keys_;
};

class Document {
 public:
  // Parses `text`, which must outlive the document; `source` names it in errors. Raises an
  // Error with the line and column of the first problem.
  static Document parse(std::string_view text, std::string source);

  const Value& root() const { return *root_; }
  const std::string& source() const { return source_; }

 private:
  friend class Parser;
  std::string source_;
  std::unique_ptr<Value> root_;
  std::deque<std::string> unescaped_;  // strings with escapes, which cannot be views
};

}  // namespace estuary::json
