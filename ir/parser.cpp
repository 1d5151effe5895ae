#include "kiln/ir/parser.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>
#include <unordered_map>

#include "kiln/ir/lexer.h"
#include "kiln/ir/parser_values.h"
#include "kiln/runtime/op_table.h"

namespace kiln::ir {
namespace {

constexpr int kMaxNesting = 64;

// Names are scoped per graph. A use before the definition gets a placeholder Value that is
// swapped for the real one once the graph's nodes are all read.
struct Scope {
  struct Pending {
    std::unique_ptr<Value> placeholder;
    int line = 0, column = 0;  // the first use
  };
  std::unordered_map<std::string, Value*> values;
  std::unordered_map<std::string, std::pair<int, int>> defined_at;
  std::map<std::string, Pending> pending;
};

struct OutputDecl {
  Token name;
  TensorType type;
};

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j)
    row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0u : 1u)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string unknown_op_message(std::string_view name) {
  std::string msg = fmt::format("unknown op '{}'", name);
  if (name == "prim.param") return msg + "; graph inputs are declared in the graph header";
  if (name.size() > 64) return msg;
  std::string best;
  size_t best_d = 3;
  auto consider = [&](std::string_view cand) {
    size_t d = edit_distance(name, cand);
    if (d < best_d) {
      best_d = d;
      best = std::string(cand);
    }
  };
  for (const OpDef* op : OpTable::instance().ops())
    consider(op->name);
  for (auto k : {NodeKind::Constant, NodeKind::FusionGroup, NodeKind::Fallback})
    consider(node_kind_name(k));
  consider("return");  // a misspelled return reads as a node without outputs
  if (!best.empty()) msg += fmt::format(" (did you mean '{}'?)", best);
  return msg;
}

class Parser : public TokenCursor {
 public:
  using TokenCursor::TokenCursor;

  std::shared_ptr<Graph> parse_top() {
    auto g = parse_graph(0);
    if (peek().kind != TokenKind::End)
      fail_at(peek(), "expected end of input after the graph's return, found " + describe(peek()));
    return g;
  }

 private:
  std::shared_ptr<Graph> parse_graph(int depth) {
    const Token& head = peek();
    if (depth >= kMaxNesting)
      fail_at(head, fmt::format("fusion groups nest deeper than {} levels", kMaxNesting));
    if (!(head.kind == TokenKind::Ident && head.text == "graph"))
      fail_at(head, "expected 'graph' to start a graph, found " + describe(head));
    next();
    expect(TokenKind::LParen, "'(' after 'graph'");
    auto g = std::make_shared<Graph>();
    Scope scope;
    // The inputs' symbolic types get their hint values once the symbols clause after them is
    // read (Note [Symbolic types]). A nested graph without a clause keeps the enclosing hints.
    std::vector<int64_t> outer_hints = hints_;
    std::vector<SymFact> outer_facts = facts_;
    if (depth == 0) {
      hints_.clear();
      facts_.clear();
    }
    symbols_known_ = false;
    std::vector<std::pair<Value*, Token>> inputs;
    if (!accept(TokenKind::RParen)) {
      while (true) {
        const Token& name = expect(TokenKind::ValueName, "a graph input '%name'");
        Token name_tok = name;
        expect(TokenKind::Colon, fmt::format("':' after the graph input '%{}'", name_tok.text));
        Token type_tok = peek();
        TensorType type = parse_type();
        Value* v = g->add_input(std::move(type), name_tok.text);
        define(scope, name_tok, v);
        inputs.emplace_back(v, type_tok);
        if (accept(TokenKind::Comma)) continue;
        expect(TokenKind::RParen, "',' or ')' after a graph input");
        break;
      }
    }
    if (peek().kind == TokenKind::Ident && peek().text == "symbols") parse_symbols_clause();
    if (peek().kind == TokenKind::Ident && peek().text == "assuming") parse_assuming_clause();
    symbols_known_ = true;
    for (auto& [v, tok] : inputs) {
      TensorType t = v->type();
      evaluate_symbolic(t, tok);
      v->set_type(std::move(t));
    }
    g->set_symbol_hints(hints_);
    g->set_symbol_facts(facts_);
    expect(TokenKind::Colon, "':' after the graph's inputs");
    while (!(peek().kind == TokenKind::Ident && peek().text == "return")) {
      if (peek().kind != TokenKind::ValueName && peek().kind != TokenKind::Ident)
        fail_at(peek(), "expected a node or 'return', found " + describe(peek()));
      parse_node(*g, scope, depth);
    }
    resolve_forward_uses(scope);
    next();  // return
    expect(TokenKind::LParen, "'(' after 'return'");
    if (!accept(TokenKind::RParen)) {
      while (true) {
        const Token& name = expect(TokenKind::ValueName, "a value '%name' in the return list");
        auto it = scope.values.find(name.text);
        if (it == scope.values.end())
          fail_at(name, fmt::format("undefined value '%{}' in the return list", name.text));
        g->add_output(it->second);
        if (accept(TokenKind::Comma)) continue;
        expect(TokenKind::RParen, "')' after the return values");
        break;
      }
    }
    hints_ = std::move(outer_hints);
    facts_ = std::move(outer_facts);
    return g;
  }

  // symbols(s0 = 8, s1 = 128): each symbol's hint, the symbols numbered from 0 in order.
  void parse_symbols_clause() {
    next();
    expect(TokenKind::LParen, "'(' after 'symbols'");
    hints_.clear();
    facts_.clear();
    if (accept(TokenKind::RParen)) return;
    while (true) {
      const Token& name = peek();
      std::string expected = fmt::format("s{}", hints_.size());
      if (name.kind != TokenKind::Ident || name.text != expected)
        fail_at(name, fmt::format("expected the symbol {} in the symbols clause (symbols are "
                                  "numbered from s0 in order), found {}",
                                  expected, describe(name)));
      next();
      expect(TokenKind::Equals, fmt::format("'=' after {}", expected));
      const Token& hint_tok = peek();
      int64_t hint = parse_int(fmt::format("the hint of {}", expected));
      if (hint < 2)
        fail_at(hint_tok, fmt::format("expected a hint of at least 2 for {}, found {}: sizes 0 and "
                                      "1 stay integers (Note [Symbolic sizes])",
                                      expected, hint));
      hints_.push_back(hint);
      if (accept(TokenKind::Comma)) continue;
      expect(TokenKind::RParen, "',' or ')' in the symbols clause");
      return;
    }
  }

  // assuming(s0 >= 4, s1 <= 8): the facts the rules assumed (Note [Assumed size facts]), each
  // over declared symbols and true at their hints.
  void parse_assuming_clause() {
    next();
    expect(TokenKind::LParen, "'(' after 'assuming'");
    facts_.clear();
    while (true) {
      const Token& first = peek();
      SymInt lhs = parse_sym_size("a fact of the assuming clause");
      const Token& rel = peek();
      if (rel.kind != TokenKind::Operator || rel.text == "+" || rel.text == "-" || rel.text == "*")
        fail_at(rel,
                "expected a relation (==, !=, <, <=, >, >=) in a fact of the assuming "
                "clause, found " +
                    describe(rel));
      std::string relation = rel.text;
      next();
      SymInt rhs = parse_sym_size("a fact of the assuming clause");
      SymFact fact = parse_sym_fact(fmt::format("{} {} {}", lhs.str(), relation, rhs.str()));
      for (const SymInt* side : {&fact.lhs, &fact.rhs})
        for (int64_t id : side->symbols())
          if (static_cast<size_t>(id) >= hints_.size())
            fail_at(first, fmt::format("the fact {} names s{}, which the symbols clause does not "
                                       "declare",
                                       fact.str(), id));
      if (!fact.holds(hints_))
        fail_at(first, fmt::format("the fact {} fails at the symbols' hints", fact.str()));
      facts_.push_back(std::move(fact));
      if (accept(TokenKind::Comma)) continue;
      expect(TokenKind::RParen, "',' or ')' in the assuming clause");
      return;
    }
  }

  void define(Scope& scope, const Token& name, Value* v) {
    auto [it, inserted] = scope.defined_at.try_emplace(name.text, name.line, name.column);
    if (!inserted)
      fail_at(name, fmt::format("redefinition of '%{}' (first defined at line {}, column {})",
                                name.text, it->second.first, it->second.second));
    scope.values[name.text] = v;
  }

  Value* use(Scope& scope, const Token& name) {
    auto it = scope.values.find(name.text);
    if (it != scope.values.end()) return it->second;
    auto& p = scope.pending[name.text];
    if (!p.placeholder) {
      p.placeholder = std::make_unique<Value>(nullptr, 0, TensorType{});
      p.line = name.line;
      p.column = name.column;
    }
    return p.placeholder.get();
  }

  void resolve_forward_uses(Scope& scope) {
    std::vector<std::pair<std::string, Scope::Pending*>> undefined;
    for (auto& [name, p] : scope.pending) {
      auto it = scope.values.find(name);
      if (it == scope.values.end()) {
        undefined.emplace_back(name, &p);
        continue;
      }
      std::vector<Use> uses = p.placeholder->uses();
      for (const Use& u : uses)
        u.user->replace_input(u.index, it->second);
    }
    if (undefined.empty()) return;
    auto first = std::min_element(undefined.begin(), undefined.end(), [](auto& a, auto& b) {
      return std::pair(a.second->line, a.second->column) <
             std::pair(b.second->line, b.second->column);
    });
    parse_error(first->second->line, first->second->column,
                fmt::format("undefined value '%{}': no node of this graph defines it, expected "
                            "a graph input or a node output",
                            first->first));
  }

  void parse_node(Graph& g, Scope& scope, int depth) {
    std::vector<OutputDecl> outputs;
    if (peek().kind == TokenKind::ValueName) {
      while (true) {
        OutputDecl d{next(), {}};
        expect(TokenKind::Colon, fmt::format("':' after the output '%{}'", d.name.text));
        d.type = parse_type();
        outputs.push_back(std::move(d));
        if (accept(TokenKind::Comma)) continue;
        expect(TokenKind::Equals, "',' or '=' after a node output");
        break;
      }
    }
    Token kind = expect(TokenKind::Ident, "the node's kind (an op name or prim.*)");
    NodeKind nk = NodeKind::Op;
    const OpDef* op = nullptr;
    if (kind.text == node_kind_name(NodeKind::Constant)) {
      nk = NodeKind::Constant;
    } else if (kind.text == node_kind_name(NodeKind::FusionGroup)) {
      nk = NodeKind::FusionGroup;
    } else if (kind.text == node_kind_name(NodeKind::Fallback)) {
      nk = NodeKind::Fallback;
    } else {
      op = OpTable::instance().find(kind.text);
      if (op == nullptr) fail_at(kind, unknown_op_message(kind.text));
    }

    expect(TokenKind::LParen, fmt::format("'(' after '{}'", kind.text));
    std::vector<Value*> inputs;
    if (!accept(TokenKind::RParen)) {
      while (true) {
        const Token& name = expect(TokenKind::ValueName,
                                   fmt::format("a value '%name' in the inputs of '{}'", kind.text));
        inputs.push_back(use(scope, name));
        if (accept(TokenKind::Comma)) continue;
        expect(TokenKind::RParen, fmt::format("')' after the inputs of '{}'", kind.text));
        break;
      }
    }
    int last_line = tokens_[pos_ - 1].line;

    std::vector<TensorType> types;
    for (const OutputDecl& d : outputs)
      types.push_back(d.type);
    Node* node = nullptr;
    switch (nk) {
      case NodeKind::Op: {
        OwnedAttrs attrs = parse_op_attrs(*op);
        last_line = tokens_[pos_ - 1].line;
        node = g.create_op(*op, inputs, attrs.get(), types);
        break;
      }
      case NodeKind::Constant:
        node = parse_constant(g, kind, inputs.size(), outputs);
        last_line = tokens_[pos_ - 1].line;
        break;
      case NodeKind::Fallback: {
        std::string name = parse_fallback_attrs();
        last_line = tokens_[pos_ - 1].line;
        node = g.create_fallback(std::move(name), {}, inputs, types);
        break;
      }
      case NodeKind::FusionGroup: {
        if (accept(TokenKind::LBrace)) {
          expect(TokenKind::RBrace, "'}': prim.fusion_group has no attributes");
          last_line = tokens_[pos_ - 1].line;
        }
        std::string site = call_site_of(last_line);
        auto sub = parse_graph(depth + 1);
        node = g.create_fusion_group(inputs, std::move(sub), types);
        node->set_call_site(std::move(site));
        break;
      }
      case NodeKind::Param:
        break;
    }
    if (nk != NodeKind::FusionGroup) node->set_call_site(call_site_of(last_line));
    for (size_t i = 0; i < outputs.size(); ++i)
      define(scope, outputs[i].name, node->output(i));
  }

  std::string call_site_of(int line) const {
    auto it = trailing_comments_.find(line);
    return it == trailing_comments_.end() ? std::string() : it->second;
  }

  // Reads `{name=value, ...}` when present: the braces are optional when no field is given.
  // Calls `field(name_token)` for each name, which must read the value.
  template <class F>
  void parse_attr_block(std::string_view kind, F&& field) {
    if (!accept(TokenKind::LBrace)) return;
    if (accept(TokenKind::RBrace)) return;
    std::vector<std::string> seen;
    while (true) {
      Token name = expect(TokenKind::Ident, fmt::format("an attribute name of '{}'", kind));
      if (std::find(seen.begin(), seen.end(), name.text) != seen.end())
        fail_at(name, fmt::format("attribute '{}' of '{}' is given twice", name.text, kind));
      seen.push_back(name.text);
      expect(TokenKind::Equals, fmt::format("'=' after the attribute name '{}'", name.text));
      field(name);
      if (accept(TokenKind::Comma)) continue;
      expect(TokenKind::RBrace, fmt::format("',' or '}}' after the attribute '{}'", name.text));
      break;
    }
  }

  [[noreturn]] void unknown_attr(const Token& name, std::string_view kind,
                                 const std::vector<std::string>& valid) {
    if (valid.empty())
      fail_at(name, fmt::format("unknown attribute '{}': '{}' has no attributes", name.text, kind));
    fail_at(name, fmt::format("unknown attribute '{}' of '{}'; expected one of: {}", name.text,
                              kind, fmt::join(valid, ", ")));
  }

  OwnedAttrs parse_op_attrs(const OpDef& op) {
    OwnedAttrs attrs(op.attrs);
    std::vector<AttrField> fields = attrs.fields();
    std::vector<std::string> names;
    for (const AttrField& f : fields)
      names.emplace_back(f.name);
    parse_attr_block(op.name, [&](const Token& name) {
      for (const AttrField& f : fields) {
        if (name.text == f.name) {
          parse_field(f, op.name);
          return;
        }
      }
      unknown_attr(name, op.name, names);
    });
    return attrs;
  }

  std::string parse_fallback_attrs() {
    std::string name;
    parse_attr_block("prim.fallback", [&](const Token& field) {
      if (field.text != "name") unknown_attr(field, "prim.fallback", {"name"});
      name = expect(TokenKind::String, "a string for 'name' of 'prim.fallback'").text;
    });
    return name;
  }

  Node* parse_constant(Graph& g, const Token& kind, size_t num_inputs,
                       const std::vector<OutputDecl>& outputs) {
    if (num_inputs != 0) fail_at(kind, "expected no inputs: prim.constant takes none");
    if (outputs.size() != 1)
      fail_at(kind, fmt::format("expected one output for prim.constant, found {}", outputs.size()));
    const TensorType& type = outputs[0].type;
    if (!type.is_contiguous())
      fail_at(outputs[0].name, "expected a contiguous type: a constant is never strided");
    std::optional<Tensor> value;
    parse_attr_block("prim.constant", [&](const Token& field) {
      if (field.text != "value") unknown_attr(field, "prim.constant", {"value"});
      if (type.device.is_meta())
        fail_at(field, "expected no 'value' for a meta constant: it has no data");
      value = parse_constant_value(type);
    });
    if (!value) {
      if (!type.device.is_meta())
        fail_at(peek(), "expected '{value=[...]}' for a constant of type " + format_type_of(type) +
                            ", found " + describe(peek()));
      value = empty_meta(type);
    }
    Node* node = g.create_constant(std::move(*value));
    node->output()->set_type(type);  // the written type, requires_grad included
    return node;
  }
};

}  // namespace

std::shared_ptr<Graph> parse(std::string_view text) {
  LexResult lex = tokenize(text);
  return Parser(std::move(lex)).parse_top();
}

}  // namespace kiln::ir
