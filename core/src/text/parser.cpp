#include "estuary/text/parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <deque>
#include <fstream>
#include <limits>
#include <unordered_map>

#include "estuary/ir/float16.h"
#include "estuary/support/error.h"
#include "text/flat_map.h"
#include "text/syntax.h"

namespace estuary {
namespace {

constexpr int kMaxNesting = 200;  // subgraph depth; deeper texts are refused, not overflowed

// A value name as written: bare names and decoded quoted names share one namespace,
// bare all-digit names (unnamed values) another.
struct Key {
  std::string_view name;
  bool numbered;
  friend bool operator==(const Key& a, const Key& b) {
    return a.numbered == b.numbered && a.name == b.name;
  }
};

struct KeyHash {
  size_t operator()(const Key& key) const {
    return std::hash<std::string_view>()(key.name) ^ static_cast<size_t>(key.numbered);
  }
};

// A parsed `%name` token.
struct ValueToken {
  Key key;
  const char* where;
};

class Parser {
 public:
  Parser(std::string_view text, std::string_view source_name)
      : begin_(text.data()), pos_(text.data()), end_(text.data() + text.size()),
        source_(source_name), forward_refs_("forward references"), symbols_(text.size() / 48) {}

  std::unique_ptr<Graph> parse() {
    root_ = std::make_unique<Graph>();
    skipSpace();
    if (!consumeKeyword("graph")) fail(pos_, "expected 'graph' at the start of the text, found ", found());
    parseGraph(*root_);
    skipSpace();
    if (pos_ != end_) fail(pos_, "expected end of input after graph ", graphLabel(*root_), ", found ", found());
    return std::move(root_);
  }

 private:
  struct Binding {
    Value* value = nullptr;
    const char* where = nullptr;
    uint32_t depth = 0;
  };
  struct Pending {
    Value* placeholder;
    const char* first_use;
  };
  struct Scope {
    std::vector<Key> defined;
    std::unordered_map<Key, Pending, KeyHash> pending;
  };

  // --- Errors ----------------------------------------------------------------------------

  template <typename... Parts>
  [[noreturn]] void fail(const char* where, const Parts&... parts) const {
    raise(source_, ':', lineColumn(where), ": ", parts...);
  }

  // "12:8" for a position in the text; computed only for messages.
  std::string lineColumn(const char* where) const {
    size_t line = 1;
    const char* line_start = begin_;
    for (const char* p = begin_; p < where; ++p) {
      if (*p == '\n') {
        ++line;
        line_start = p + 1;
      }
    }
    return std::to_string(line) + ':' + std::to_string(where - line_start + 1);
  }

  // What the text holds at the cursor, for "found ..." in messages.
  std::string found() const { return describeAt(pos_); }

  std::string describeAt(const char* p) const {
    if (p >= end_) return "end of input";
    const char* stop = p;
    const size_t name_length = text::bareNameLength({p, static_cast<size_t>(end_ - p)});
    if (name_length > 0) {
      stop += std::min<size_t>(name_length, 40);
    } else if (*p == '"') {
      ++stop;
      while (stop < end_ && *stop != '"' && *stop != '\n' && stop - p < 40) ++stop;
      if (stop < end_ && *stop == '"') ++stop;
    } else {
      ++stop;
    }
    return "'" + std::string(p, stop) + "'";
  }

  static std::string graphLabel(const Graph& graph) {
    std::string label = "@";
    label += graph.name();
    return label;
  }

  // --- Lexing ----------------------------------------------------------------------------

  void skipSpace() {
    while (pos_ < end_) {
      char c = *pos_;
      if (c == ' ' || c == '\n' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < end_ && *pos_ != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  bool peek(char c) {
    skipSpace();
    return pos_ < end_ && *pos_ == c;
  }

  bool consume(char c) {
    if (!peek(c)) return false;
    ++pos_;
    return true;
  }

  template <typename... Context>
  void expect(char c, const Context&... context) {
    if (consume(c)) return;
    const char quoted[] = {'\'', c, '\'', 0};
    fail(pos_, "expected ", quoted, ' ', context..., ", found ", found());
  }

  // A keyword followed by something that cannot continue an identifier.
  bool consumeKeyword(std::string_view keyword) {
    skipSpace();
    if (static_cast<size_t>(end_ - pos_) < keyword.size() ||
        std::string_view(pos_, keyword.size()) != keyword) {
      return false;
    }
    const char* after = pos_ + keyword.size();
    if (after < end_ && (text::isIdentChar(*after) || *after == '"')) return false;
    pos_ = after;
    return true;
  }

  std::string_view scanIdentifier() {
    const char* start = pos_;
    if (pos_ < end_ && text::isIdentStart(*pos_)) {
      ++pos_;
      while (pos_ < end_ && text::isIdentChar(*pos_)) ++pos_;
    }
    return {start, static_cast<size_t>(pos_ - start)};
  }

  // A double-quoted string with C escapes; the cursor is on the opening quote.
  void parseQuoted(std::string& out) {
    const char* open = pos_++;
    out.clear();
    const char* run = pos_;
    while (true) {
      if (pos_ >= end_ || *pos_ == '\n') fail(open, "unterminated string (missing closing '\"')");
      char c = *pos_;
      if (c == '"') break;
      if (c != '\\') {
        ++pos_;
        continue;
      }
      out.append(run, pos_);
      const char* escape = pos_;
      if (pos_ + 1 >= end_) fail(escape, "unterminated string (missing closing '\"')");
      char kind = pos_[1];
      pos_ += 2;
      switch (kind) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'x': {
          int value = 0;
          for (int i = 0; i < 2; ++i) {
            int digit = pos_ < end_ ? hexDigit(*pos_) : -1;
            if (digit < 0) fail(escape, "expected two hex digits after '\\x' in a string");
            value = value * 16 + digit;
            ++pos_;
          }
          out += static_cast<char>(value);
          break;
        }
        default:
          fail(escape, "unknown escape '\\", std::string(1, kind),
               "' in a string (known: \\\" \\\\ \\n \\t \\r \\xHH)");
      }
      run = pos_;
    }
    out.append(run, pos_);
    ++pos_;
  }

  static int hexDigit(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  }

  // An op type, domain or attribute name: an identifier or a quoted string (decoded into
  // `storage`, which the result then views).
  std::string_view parseIdentifier(const char* what, std::string& storage) {
    skipSpace();
    if (pos_ < end_ && *pos_ == '"') {
      parseQuoted(storage);
      return storage;
    }
    std::string_view name = scanIdentifier();
    if (name.empty()) fail(pos_, "expected ", what, ", found ", found());
    return name;
  }

  // `%name`, `%"quoted name"` or `%12`; the cursor is on '%'. Quoted names are decoded
  // into scratch_, which the returned key views until the next call.
  ValueToken parseValueToken() {
    const char* where = pos_++;
    if (pos_ < end_ && *pos_ == '"') {
      parseQuoted(scratch_);
      if (scratch_.empty()) fail(where, "a value name cannot be empty: write %0, %1, ... for unnamed values");
      return {{scratch_, false}, where};
    }
    std::string_view name(pos_, text::bareNameLength({pos_, static_cast<size_t>(end_ - pos_)}));
    pos_ += name.size();
    if (name.empty()) fail(where, "expected a value name after '%', found ", describeAt(pos_));
    return {{name, text::isAllDigits(name)}, where};
  }

  std::string parseGraphName() {
    if (!consume('@')) fail(pos_, "expected '@' and a graph name after 'graph', found ", found());
    if (pos_ < end_ && *pos_ == '"') {
      std::string name;
      parseQuoted(name);
      return name;
    }
    std::string_view name(pos_, text::bareNameLength({pos_, static_cast<size_t>(end_ - pos_)}));
    if (name.empty()) fail(pos_, "expected a graph name after '@', found ", found());
    pos_ += name.size();
    return std::string(name);
  }

  // --- Types -----------------------------------------------------------------------------

  template <typename... Context>
  TensorType parseType(const Context&... context) {
    skipSpace();
    const char* start = pos_;
    const char* p = pos_;
    while (p < end_ && (text::isIdentChar(*p) || *p == '?')) ++p;
    bool shaped = p > start && p < end_ && *p == '[';
    if (shaped) {
      while (p < end_ && *p != ']' && *p != '\n') ++p;
      shaped = p < end_ && *p == ']';
    }
    if (!shaped) fail(start, "expected a type like f32[batch,16] ", context..., ", found ", found());
    std::string_view spelling(start, static_cast<size_t>(p + 1 - start));
    pos_ = p + 1;
    // Neighbouring values mostly share a type: compare with the last one before hashing.
    if (last_type_ && spelling == last_type_->first) return last_type_->second;
    auto cached = type_cache_.find(spelling);
    if (cached == type_cache_.end()) {
      std::optional<TensorType> type = TensorType::parse(spelling);
      if (!type) {
        std::string_view dtype_name(start, static_cast<size_t>(std::find(start, p, '[') - start));
        if (!parseDType(dtype_name) && dtype_name != "?") {
          fail(start, "unknown element type '", dtype_name, "' ", context...,
               " (known: f32 f16 bf16 f64 i8 i16 i32 i64 u8 bool, or ? when unknown)");
        }
        fail(start, "bad type '", spelling, "' ", context...,
             ": dims are integers, ?, or symbolic expressions like batch*seq+1");
      }
      cached = type_cache_.emplace(spelling, std::move(*type)).first;
    }
    last_type_ = &*cached;
    return cached->second;
  }

  // --- Values and scopes -----------------------------------------------------------------

  Scope& scope() { return scopes_.back(); }
  uint32_t depth() const { return static_cast<uint32_t>(scopes_.size() - 1); }

  // Registers a definition. A bare name's key views the source text; a quoted name's key
  // is re-pointed at the value's own copy of the name, which lives as long as the value.
  void define(const ValueToken& token, Value* value) {
    Key key = token.key;
    if (!key.numbered && !(key.name.data() >= begin_ && key.name.data() < end_)) {
      key.name = value->name();
    }
    auto [binding, inserted] = symbols_.tryEmplace(key, Binding{value, token.where, depth()});
    if (!inserted) {
      fail(token.where, "duplicate definition of ", spell(key), " (first defined at ",
           lineColumn(binding->where), ")");
    }
    // The top-level scope is never popped before the parse ends; no need to remember its keys.
    if (scopes_.size() > 1) scope().defined.push_back(key);
  }

  static std::string valueName(const Key& key) {
    return key.numbered ? std::string() : std::string(key.name);
  }

  static std::string spell(const Key& key) {
    std::string out = "%";
    if (key.numbered || text::isBareName(key.name)) {
      out += key.name;
    } else {
      text::appendQuoted(out, key.name);
    }
    return out;
  }

  // The value a use refers to; a name not defined yet gets a placeholder that is
  // replaced when the enclosing graph ends (see popScope()).
  Value* resolve(const ValueToken& token) {
    if (Binding* binding = symbols_.find(token.key)) return binding->value;
    auto found_pending = scope().pending.find(token.key);
    if (found_pending != scope().pending.end()) return found_pending->second.placeholder;
    Value* placeholder = forward_refs_.createNode("ForwardReference", {}, 1)->output(0);
    Key key = token.key;
    if (!key.numbered) {
      placeholder->setName(std::string(key.name));
      key.name = placeholder->name();
    }
    scope().pending.emplace(key, Pending{placeholder, token.where});
    return placeholder;
  }

  Value* parseOperand(bool allow_absent, const char* context, std::string_view subject) {
    skipSpace();
    if (pos_ < end_ && *pos_ == '%') return resolve(parseValueToken());
    if (allow_absent && pos_ < end_ && *pos_ == '_' &&
        !(pos_ + 1 < end_ && text::isNameChar(pos_[1]))) {
      ++pos_;
      return nullptr;
    }
    fail(pos_, "expected a value (%name", allow_absent ? " or _ for an absent operand" : "", ") ",
         context, subject, ", found ", found());
  }

  void pushScope() {
    if (scopes_.size() >= static_cast<size_t>(kMaxNesting)) {
      fail(pos_, "subgraphs nested deeper than ", kMaxNesting, " levels");
    }
    scopes_.emplace_back();
  }

  // Resolves the forward references made in the ending graph: to its own definitions, or
  // (handed up) to those of an enclosing graph, which may still come later.
  void popScope() {
    Scope& ending = scope();
    const uint32_t ending_depth = depth();
    std::vector<std::pair<Key, Pending>> unresolved;
    for (auto& [key, pending] : ending.pending) {
      Binding* binding = symbols_.find(key);
      if (binding && binding->depth == ending_depth) {
        pending.placeholder->replaceAllUsesWith(binding->value);
      } else {
        unresolved.emplace_back(key, pending);
      }
    }
    for (const Key& key : ending.defined) symbols_.erase(key);
    if (scopes_.size() == 1) {
      if (!unresolved.empty()) {
        auto first = std::min_element(unresolved.begin(), unresolved.end(),
                                      [](const auto& a, const auto& b) {
                                        return a.second.first_use < b.second.first_use;
                                      });
        fail(first->second.first_use, "undefined value ", spell(first->first));
      }
      scopes_.pop_back();
      return;
    }
    Scope& parent = scopes_[scopes_.size() - 2];
    for (auto& [key, pending] : unresolved) {
      auto [it, inserted] = parent.pending.try_emplace(key, pending);
      if (!inserted) {
        pending.placeholder->replaceAllUsesWith(it->second.placeholder);
        it->second.first_use = std::min(it->second.first_use, pending.first_use);
      }
    }
    scopes_.pop_back();
  }

  // --- Graphs and statements ---------------------------------------------------------------

  // After the 'graph' keyword: `@name(inputs) { statements return ... update ... }`.
  void parseGraph(Graph& graph) {
    graph.setName(parseGraphName());
    const std::string label = graphLabel(graph);
    expect('(', "after graph ", label);
    pushScope();
    if (!consume(')')) {
      do {
        skipSpace();
        if (pos_ >= end_ || *pos_ != '%') {
          fail(pos_, "expected an input (%name: type) of graph ", label, ", found ", found());
        }
        ValueToken token = parseValueToken();
        std::string name = valueName(token.key);
        expect(':', "after input ", spell(token.key));
        TensorType type = parseType("for input ", spell(token.key));
        bool is_mutable = consumeKeyword("mutable");
        Value* input = graph.addInput(std::move(name), std::move(type), is_mutable);
        define(token, input);
      } while (consume(','));
      expect(')', "after the inputs of graph ", label);
    }
    expect('{', "to open the body of graph ", label);
    while (true) {
      skipSpace();
      if (pos_ < end_ && *pos_ == '%') {
        parseNode(graph);
      } else if (consumeKeyword("return")) {
        break;
      } else if (pos_ < end_ && (text::isIdentStart(*pos_) || *pos_ == '"')) {
        if (consumeKeyword("update")) fail(pos_, "'update' lines must follow 'return' in graph ", label);
        parseNode(graph);
      } else if (pos_ < end_ && *pos_ == '}') {
        fail(pos_, "expected 'return' before '}' closing graph ", label);
      } else {
        fail(pos_, "expected a node, 'return' or '}' in graph ", label, ", found ", found());
      }
    }
    parseReturn(graph, label);
    expect('}', "to close graph ", label);
    popScope();
  }

  void parseReturn(Graph& graph, const std::string& label) {
    if (peek('%') || peek('_')) {
      do {
        graph.addOutput(parseOperand(false, "as an output of graph ", label));
      } while (consume(','));
    }
    while (consumeKeyword("update")) {
      skipSpace();
      if (pos_ >= end_ || *pos_ != '%') {
        fail(pos_, "expected a mutable input (%name) after 'update', found ", found());
      }
      ValueToken target_token = parseValueToken();
      Binding* target = symbols_.find(target_token.key);
      Value* input = target ? target->value : nullptr;
      if (!input || !input->isGraphInput() || input->graph() != &graph) {
        fail(target_token.where, "update target ", spell(target_token.key),
             " is not an input of graph ", label);
      }
      if (!input->isMutableInput()) {
        fail(target_token.where, "update target ", spell(target_token.key),
             " is not a mutable input of graph ", label, " (declare it with 'mutable')");
      }
      if (graph.inputUpdate(input)) {
        fail(target_token.where, "input ", spell(target_token.key), " is updated twice");
      }
      const std::string target_name = spell(target_token.key);
      expect('=', "after 'update ", target_name, "'");
      graph.setInputUpdate(input, parseOperand(false, "as the new value of ", target_name));
    }
  }

  void parseNode(Graph& graph) {
    results_.clear();
    if (peek('%')) {
      do {
        skipSpace();
        if (pos_ >= end_ || *pos_ != '%') fail(pos_, "expected a result name (%name), found ", found());
        ValueToken token = parseValueToken();
        if (!token.key.numbered && token.key.name.data() == scratch_.data()) {
          quoted_results_.push_back(scratch_);
          token.key.name = quoted_results_.back();
        }
        results_.push_back(token);
      } while (consume(','));
      expect('=', "after the results of a node");
    }
    skipSpace();
    const char* op_start = pos_;
    std::string_view domain;
    std::string_view op_type = parseIdentifier("an op name", domain_storage_);
    if (pos_ + 1 < end_ && pos_[0] == ':' && pos_[1] == ':') {
      pos_ += 2;
      domain = op_type;
      op_type = parseIdentifier("an op name after '::'", op_storage_);
    }
    const std::string_view op_label(op_start, static_cast<size_t>(pos_ - op_start));
    expect('(', "after op name ", op_label);
    operands_.clear();
    if (!consume(')')) {
      do {
        operands_.push_back(parseOperand(true, "as an operand of node ", op_label));
      } while (consume(','));
      expect(')', "after operands of node '", op_label, "'");
    }
    Node* node = graph.createNode(op_type, operands_, results_.size(), domain);
    // results_ and quoted_results_ are reused by nested subgraphs: finish with them first.
    for (size_t i = 0; i < results_.size(); ++i) {
      node->output(i)->setName(valueName(results_[i].key));
      define(results_[i], node->output(i));
    }
    const size_t num_results = results_.size();
    quoted_results_.clear();
    if (consume('{')) {
      do {
        skipSpace();
        const char* name_start = pos_;
        std::string name(parseIdentifier("an attribute name", scratch_));
        if (node->hasAttr(name)) {
          fail(name_start, "duplicate attribute '", name, "' on node '", op_label, "'");
        }
        expect('=', "after attribute name '", name, "'");
        Attribute value = parseAttribute(name);
        node->setAttr(std::move(name), std::move(value));
      } while (consume(','));
      expect('}', "after the attributes of node '", op_label, "'");
    }
    if (consume(':')) {
      if (num_results == 0) {
        fail(pos_ - 1, "node '", op_label, "' has no results, so it takes no ':' and types");
      }
      for (size_t i = 0; i < num_results; ++i) {
        if (i) expect(',', "and a type for result ", i, " of node '", op_label, "'");
        node->output(i)->setType(parseType("for result ", i, " of node '", op_label, "'"));
      }
      if (peek(',')) {
        fail(pos_, "node '", op_label, "' has ", num_results, " result", num_results == 1 ? "" : "s",
             " but more types");
      }
    }
    if (consumeKeyword("loc")) {
      expect('(', "after 'loc'");
      if (!peek('"')) fail(pos_, "expected a quoted node name in loc(...), found ", found());
      std::string name;
      parseQuoted(name);
      node->setName(std::move(name));
      expect(')', "after the node name in loc(...)");
    }
  }

  // --- Attributes ------------------------------------------------------------------------

  // The run of characters a number may consist of: digits, signs, '.', exponents, inf, nan.
  std::string_view scanNumber() {
    skipSpace();
    const char* start = pos_;
    while (pos_ < end_ && (std::isalnum(static_cast<unsigned char>(*pos_)) || *pos_ == '.' ||
                           *pos_ == '-' || *pos_ == '+')) {
      ++pos_;
    }
    return {start, static_cast<size_t>(pos_ - start)};
  }

  static bool parseInt(std::string_view token, int64_t& value) {
    auto result = std::from_chars(token.data(), token.data() + token.size(), value);
    return result.ec == std::errc() && result.ptr == token.data() + token.size();
  }

  template <typename T>
  static bool parseFloating(std::string_view token, T& value) {
    if (token == "nan") {
      value = std::numeric_limits<T>::quiet_NaN();
      return true;
    }
    if (token == "inf" || token == "-inf") {
      value = token[0] == '-' ? -std::numeric_limits<T>::infinity()
                              : std::numeric_limits<T>::infinity();
      return true;
    }
    const char* first = token.data();
    const char* last = token.data() + token.size();
    if (first == last || !(std::isdigit(static_cast<unsigned char>(*first)) || *first == '-' ||
                           *first == '.')) {
      return false;
    }
    auto result = std::from_chars(first, last, value);
    return result.ec == std::errc() && result.ptr == last;
  }

  static bool looksIntegral(std::string_view token) {
    if (!token.empty() && token[0] == '-') token.remove_prefix(1);
    return text::isAllDigits(token);
  }

  // A number in an attribute: an integer, or a float when it has '.', 'e', or is inf/nan.
  // An integer beyond int64 is an error rather than silently a float.
  Attribute parseNumber(const std::string& attr_name) {
    skipSpace();
    const char* start = pos_;
    std::string_view token = scanNumber();
    int64_t int_value;
    if (parseInt(token, int_value)) return Attribute(int_value);
    double float_value;
    if (looksIntegral(token)) fail(start, "integer ", token, " in attribute '", attr_name, "' is out of the int64 range");
    if (parseFloating(token, float_value)) return Attribute(float_value);
    fail(start, "bad number '", token, "' in attribute '", attr_name, "'");
  }

  Attribute parseAttribute(const std::string& name) {
    skipSpace();
    if (pos_ >= end_) fail(pos_, "expected a value for attribute '", name, "', found end of input");
    char c = *pos_;
    if (c == '"') {
      std::string value;
      parseQuoted(value);
      return Attribute(std::move(value));
    }
    if (c == '[') return parseList(name);
    if (c == '-' || c == '.' || (c >= '0' && c <= '9')) return parseNumber(name);
    if (c == '?') {
      ++pos_;
      return Attribute(DType::Undefined);
    }
    const char* start = pos_;
    std::string_view word = scanIdentifier();
    if (word == "inf" || word == "nan") {
      pos_ = start;
      return parseNumber(name);
    }
    if (word == "tensor") return parseTensor(name);
    if (word == "graph") {
      auto subgraph = std::make_shared<Graph>();
      parseGraph(*subgraph);
      return Attribute(std::move(subgraph));
    }
    if (word == "ints" || word == "floats" || word == "strings") {
      expect('[', "after '", word, "'");
      expect(']', "after '", word, "[' (only empty lists are spelled with their kind)");
      if (word == "ints") return Attribute(std::vector<int64_t>{});
      if (word == "floats") return Attribute(std::vector<double>{});
      return Attribute(std::vector<std::string>{});
    }
    if (std::optional<DType> dtype = parseDType(word)) return Attribute(*dtype);
    pos_ = start;
    fail(start, "expected a value for attribute '", name,
         "' (number, string, list, element type, tensor<...> or graph), found ", found());
  }

  // `[1, 2]`, `[1.0, 2.5]`, `["a", "b"]`: a list is of floats when any element is.
  Attribute parseList(const std::string& name) {
    const char* open = pos_++;
    if (peek(']')) {
      fail(open, "an empty list needs its kind: write ints[], floats[] or strings[] for attribute '",
           name, "'");
    }
    if (peek('"')) {
      std::vector<std::string> values;
      do {
        if (!peek('"')) fail(pos_, "expected a string in the list of attribute '", name, "', found ", found());
        values.emplace_back();
        parseQuoted(values.back());
      } while (consume(','));
      expect(']', "to close the list of attribute '", name, "'");
      return Attribute(std::move(values));
    }
    std::vector<int64_t> ints;
    std::vector<double> floats;
    bool is_float = false;
    do {
      skipSpace();
      const char* start = pos_;
      std::string_view token = scanNumber();
      int64_t int_value;
      double float_value;
      const bool integral = looksIntegral(token);
      if (integral && !parseInt(token, int_value)) {
        fail(start, "integer ", token, " in attribute '", name, "' is out of the int64 range");
      }
      if (!is_float && integral) {
        ints.push_back(int_value);
      } else if (integral) {
        floats.push_back(static_cast<double>(int_value));
      } else if (parseFloating(token, float_value)) {
        if (!is_float) {
          floats.assign(ints.begin(), ints.end());
          is_float = true;
        }
        floats.push_back(float_value);
      } else {
        pos_ = start;
        fail(start, "expected a number in the list of attribute '", name, "', found ", found());
      }
    } while (consume(','));
    expect(']', "to close the list of attribute '", name, "'");
    if (is_float) return Attribute(std::move(floats));
    return Attribute(std::move(ints));
  }

  // After 'tensor': `<f32[2,2]> [1.0, ...]`, `<f32[2,2]> 0x...` (little-endian bytes).
  Attribute parseTensor(const std::string& name) {
    expect('<', "after 'tensor' in attribute '", name, "'");
    skipSpace();
    const char* type_start = pos_;
    std::string_view dtype_name = scanIdentifier();
    std::optional<DType> dtype = parseDType(dtype_name);
    if (!dtype || *dtype == DType::Undefined) {
      pos_ = type_start;
      fail(type_start, "expected the element type of a tensor (f32, i64, ...), found ", found());
    }
    expect('[', "after the element type of a tensor");
    std::vector<int64_t> shape;
    if (!consume(']')) {
      do {
        skipSpace();
        const char* dim_start = pos_;
        std::string_view token = scanNumber();
        int64_t dim;
        if (!parseInt(token, dim) || dim < 0) {
          pos_ = dim_start;
          fail(dim_start, "expected a static dimension (an integer >= 0) in a tensor type, found ",
               found());
        }
        shape.push_back(dim);
      } while (consume(','));
      expect(']', "after the dimensions of a tensor");
    }
    expect('>', "after the type of a tensor");
    const std::string type_text = TensorType(*dtype, Shape::ofStatic(shape)).str();
    skipSpace();
    const char* data_start = pos_;
    if (consumeKeyword("elided")) {
      fail(data_start, "the data of tensor<", type_text, "> in attribute '", name,
           "' was elided when this text was printed and cannot be read back; print the graph "
           "without eliding tensors");
    }
    int64_t count = 1;
    for (int64_t dim : shape) {
      if (dim != 0 && count > std::numeric_limits<int64_t>::max() / dim) {
        fail(type_start, "tensor<", type_text, "> has too many elements");
      }
      count *= dim;
    }
    const size_t element_size = dtypeSize(*dtype);
    if (static_cast<uint64_t>(count) > static_cast<uint64_t>(end_ - begin_)) {
      // Every element takes at least one character of text; a larger count cannot be
      // right, and allocating for it first would be an easy way to exhaust memory.
      fail(data_start, "tensor<", type_text, "> has ", count, " elements but the text is shorter than that");
    }
    Tensor tensor = Tensor::allocate(*dtype, shape);
    auto* bytes = static_cast<unsigned char*>(tensor.mutableData());
    if (pos_ + 1 < end_ && pos_[0] == '0' && pos_[1] == 'x') {
      pos_ += 2;
      const char* hex_start = pos_;
      while (pos_ < end_ && hexDigit(*pos_) >= 0) ++pos_;
      const size_t digits = static_cast<size_t>(pos_ - hex_start);
      const size_t byte_size = static_cast<size_t>(count) * element_size;
      if (digits != 2 * byte_size) {
        fail(hex_start, "tensor<", type_text, "> needs ", byte_size, " bytes (", 2 * byte_size,
             " hex digits), found ", digits, " hex digits");
      }
      for (size_t i = 0; i < byte_size; ++i) {
        bytes[i] = static_cast<unsigned char>(hexDigit(hex_start[2 * i]) * 16 +
                                              hexDigit(hex_start[2 * i + 1]));
      }
      return Attribute(std::move(tensor));
    }
    expect('[', "or 0x... with the data of tensor<", type_text, ">");
    int64_t index = 0;
    if (!consume(']')) {
      do {
        skipSpace();
        const char* element_start = pos_;
        std::string_view token = scanNumber();
        if (index >= count) {
          fail(element_start, "tensor<", type_text, "> has ", count, " elements, found more");
        }
        if (!parseElement(*dtype, token, bytes + index * element_size)) {
          pos_ = element_start;
          fail(element_start, "expected an element of type ", dtypeName(*dtype), " in tensor<",
               type_text, ">, found ", found());
        }
        ++index;
      } while (consume(','));
      expect(']', "after the elements of tensor<", type_text, ">");
    }
    if (index != count) {
      fail(pos_ - 1, "tensor<", type_text, "> has ", count, " elements, found ", index);
    }
    return Attribute(std::move(tensor));
  }

  template <typename T>
  static bool storeInt(std::string_view token, unsigned char* out) {
    int64_t value;
    if (!parseInt(token, value) || value < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
        value > static_cast<int64_t>(std::numeric_limits<T>::max())) {
      return false;
    }
    T narrow = static_cast<T>(value);
    std::memcpy(out, &narrow, sizeof(T));
    return true;
  }

  // f16 and bf16 elements read as f32 first and are then rounded, which is how the printer
  // chose their shortest spelling.
  static bool parseElement(DType dtype, std::string_view token, unsigned char* out) {
    switch (dtype) {
      case DType::F32:
      case DType::F16:
      case DType::BF16: {
        float value;
        if (!parseFloating(token, value)) return false;
        if (dtype == DType::F32) {
          std::memcpy(out, &value, 4);
        } else {
          if (dtype == DType::F16) {
            const Float16 half = toFloat16(value);
            std::memcpy(out, &half, 2);
          } else {
            const BFloat16 bfloat = toBFloat16(value);
            std::memcpy(out, &bfloat, 2);
          }
        }
        return true;
      }
      case DType::F64: {
        double value;
        if (!parseFloating(token, value)) return false;
        std::memcpy(out, &value, 8);
        return true;
      }
      case DType::I8: return storeInt<int8_t>(token, out);
      case DType::I16: return storeInt<int16_t>(token, out);
      case DType::I32: return storeInt<int32_t>(token, out);
      case DType::I64: return storeInt<int64_t>(token, out);
      case DType::U8: return storeInt<uint8_t>(token, out);
      case DType::Bool:
        if (token != "true" && token != "false") return false;
        *out = token == "true";
        return true;
      case DType::Undefined: return false;
    }
    return false;
  }

  const char* begin_;
  const char* pos_;
  const char* end_;
  std::string_view source_;
  // Placeholders for forward references. Declared before root_ so that it outlives the
  // graph whose operands may still point at its values when a parse fails.
  Graph forward_refs_;
  std::unique_ptr<Graph> root_;
  std::vector<Scope> scopes_;
  text::FlatMap<Key, Binding, KeyHash> symbols_;
  std::unordered_map<std::string_view, TensorType> type_cache_;
  const std::pair<const std::string_view, TensorType>* last_type_ = nullptr;
  std::vector<ValueToken> results_;
  std::deque<std::string> quoted_results_;  // a deque: keys view its strings while it grows
  std::vector<Value*> operands_;
  std::string scratch_;
  std::string op_storage_;
  std::string domain_storage_;
};

}  // namespace

std::unique_ptr<Graph> parseGraph(std::string_view text, std::string_view source_name) {
  return Parser(text, source_name).parse();
}

std::unique_ptr<Graph> parseGraphFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) raise(path, ": cannot open: ", std::strerror(errno));
  std::string text((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (file.bad()) raise(path, ": cannot read: ", std::strerror(errno));
  return parseGraph(text, path);
}

}  // namespace estuary
