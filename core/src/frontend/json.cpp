#include "estuary/frontend/json.h"

#include <charconv>
#include <cmath>
#include <cstdlib>

#include "estuary/support/error.h"

namespace estuary::json {

const char* Value::kindName() const {
  switch (kind_) {
    case Kind::Null:
      return "null";
    case Kind::Bool:
      return "a boolean";
    case Kind::Number:
      return "a number";
    case Kind::String:
      return "a string";
    case Kind::Array:
      return "an array";
    case Kind::Object:
      return "an object";
  }
  return "a value";
}

std::optional<int64_t> Value::integer() const {
  if (kind_ != Kind::Number) return std::nullopt;
  int64_t value = 0;
  auto [end, error] = std::from_chars(text_.data(), text_.data() + text_.size(), value);
  if (error != std::errc() || end != text_.data() + text_.size()) return std::nullopt;
  return value;
}

double Value::number() const {
  // strtod needs a terminated string; numbers are short.
  std::string text(text_);
  return std::strtod(text.c_str(), nullptr);
}

const Value* Value::find(std::string_view key) const {
  for (size_t i = 0; i < keys_.size(); ++i) {
    if (keys_[i] == key) return &children_[i];
  }
  return nullptr;
}

class Parser {
 public:
  Parser(std::string_view text, Document& document) : text_(text), document_(document) {}

  void parse(Value& root) {
    skipSpace();
    value(root, 0);
    skipSpace();
    if (at_ != text_.size()) fail("more text after the document's value");
  }

 private:
  // Deep nesting is a malformed (or hostile) file, not a program.
  static constexpr int kMaxDepth = 512;

  template <typename... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    raise(document_.source_, ": line ", line, ", column ", column, ": ", parts...);
  }

  void skipSpace() {
    while (at_ < text_.size()) {
      char c = text_[at_];
      if (c == '\n') ++line_;
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
      ++at_;
    }
  }

  char peek() const { return at_ < text_.size() ? text_[at_] : '\0'; }

  void expectWord(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) fail("expected a JSON value");
    at_ += word.size();
  }

  void value(Value& out, int depth) {
    if (depth > kMaxDepth) fail("values nested more than ", kMaxDepth, " deep");
    out.line_ = line_;
    switch (peek()) {
      case '{':
        object(out, depth);
        return;
      case '[':
        array(out, depth);
        return;
      case '"':
        out.kind_ = Value::Kind::String;
        out.text_ = string();
        return;
      case 't':
        expectWord("true");
        out.kind_ = Value::Kind::Bool;
        out.boolean_ = true;
        return;
      case 'f':
        expectWord("false");
        out.kind_ = Value::Kind::Bool;
        return;
      case 'n':
        expectWord("null");
        return;
      case '\0':
        fail("the text ends where a value should be (the file is truncated?)");
      default:
        number(out);
    }
  }

  void object(Value& out, int depth) {
    out.kind_ = Value::Kind::Object;
    ++at_;
    skipSpace();
    if (peek() == '}') {
      ++at_;
      return;
    }
    for (;;) {
      skipSpace();
      if (peek() != '"') fail(peek() == '\0' ? "the text ends inside an object" : "expected a member name in quotes");
      out.keys_.push_back(string());
      skipSpace();
      if (peek() != ':') fail("expected ':' after a member name");
      ++at_;
      skipSpace();
      out.children_.emplace_back();
      value(out.children_.back(), depth + 1);
      skipSpace();
      char c = peek();
      if (c != ',' && c != '}') fail(c == '\0' ? "the text ends inside an object" : "expected ',' or '}' in an object");
      ++at_;
      if (c == '}') return;
    }
  }

  void array(Value& out, int depth) {
    out.kind_ = Value::Kind::Array;
    ++at_;
    skipSpace();
    if (peek() == ']') {
      ++at_;
      return;
    }
    for (;;) {
      skipSpace();
      out.children_.emplace_back();
      value(out.children_.back(), depth + 1);
      skipSpace();
      char c = peek();
      if (c != ',' && c != ']') fail(c == '\0' ? "the text ends inside an array" : "expected ',' or ']' in an array");
      ++at_;
      if (c == ']') return;
    }
  }

  void number(Value& out) {
    size_t start = at_;
    if (peek() == '-') ++at_;
    auto digits = [&] {
      size_t first = at_;
      while (peek() >= '0' && peek() <= '9') ++at_;
      return at_ > first;
    };
    if (!digits()) fail("expected a JSON value");
    if (peek() == '.') {
      ++at_;
      if (!digits()) fail("expected digits after a decimal point");
    }
    if (peek() == 'e' || peek() == 'E') {
      ++at_;
      if (peek() == '+' || peek() == '-') ++at_;
      if (!digits()) fail("expected digits in an exponent");
    }
    out.kind_ = Value::Kind::Number;
    out.text_ = text_.substr(start, at_ - start);
  }

  // A string at `at_` (which is its opening quote): a view of the text when it has no
  // escapes, else the unescaped copy the document keeps.
  std::string_view string() {
    size_t start = ++at_;
    bool escaped = false;
    for (;;) {
      if (at_ >= text_.size()) fail("the text ends inside a string");
      char c = text_[at_];
      if (c == '"') break;
      if (static_cast<unsigned char>(c) < 0x20) fail("a control character inside a string");
      if (c == '\\') {
        escaped = true;
        ++at_;
      }
      ++at_;
    }
    std::string_view raw = text_.substr(start, at_ - start);
    ++at_;
    if (!escaped) return raw;
    std::string& out = document_.unescaped_.emplace_back();
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\') {
        out.push_back(raw[i]);
        continue;
      }
      char c = raw[++i];
      switch (c) {
        case 'n': out.push_back('\n'); break;
        case 't': out.push_back('\t'); break;
        case 'r': out.push_back('\r'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case '"': case '\\': case '/': out.push_back(c); break;
        case 'u': appendCodePoint(raw, i, out); break;
        default: fail("an unknown escape '\\", c, "' in a string");
      }
    }
    return out;
  }

  // \uXXXX (and a surrogate pair) as UTF-8; `i` is at the 'u'.
  void appendCodePoint(std::string_view raw, size_t& i, std::string& out) {
    auto hex = [&](size_t from) -> uint32_t {
      if (from + 4 > raw.size()) fail("a \\u escape needs four hex digits");
      uint32_t value = 0;
      for (size_t k = from; k < from + 4; ++k) {
        char c = raw[k];
        uint32_t digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                         : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 16;
        if (digit == 16) fail("a \\u escape needs four hex digits");
        value = value * 16 + digit;
      }
      return value;
    };
    uint32_t code = hex(i + 1);
    i += 4;
    if (code >= 0xD800 && code < 0xDC00 && i + 6 < raw.size() && raw.substr(i + 1, 2) == "\\u") {
      uint32_t low = hex(i + 3);
      if (low >= 0xDC00 && low < 0xE000) {
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        i += 6;
      }
    }
    if (code < 0x80) {
      out.push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (code >> 6)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (code >> 12)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (code >> 18)));
      out.push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  std::string_view text_;
  Document& document_;
  size_t at_ = 0;
  size_t line_ = 1;
};

Document Document::parse(std::string_view text, std::string source) {
  Document document;
  document.source_ = std::move(source);
  document.root_ = std::make_unique<Value>();
  Parser(text, document).parse(*document.root_);
  return document;
}

}  // namespace estuary::json
