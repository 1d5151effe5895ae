// The IR text printer: the format of ir/README.md, deterministic, and read back by
// ir/parser.h so that print(parse(print(g))) == print(g).
#pragma once

#include <ostream>
#include <string>
#include <unordered_map>

#include "kiln/ir/graph.h"

namespace kiln::ir {

std::string print(const Graph& g);

// The names print() gives a graph's values ("%x", "%arg1", "%3"), for messages that point into
// a dump (the verifier's, the interpreter's).
using ValueNames = std::unordered_map<const Value*, std::string>;
ValueNames value_names(const Graph& g);
// A node as its line reads, without types and attributes: "%3 = mm(%x, %2)  # mlp.cpp:4 in f".
std::string describe_node(const Node& n, const ValueNames& names);
std::ostream& operator<<(std::ostream& os, const Graph& g);

// The pieces of a node line, shared with the DOT export.
std::string format_type(const TensorType& t);  // "f32[4, 3] strided[1, 4] cuda:0"
// "dim=1, keepdim=false" for an op, "value=[1.0, 2.0]" for a constant, `name="f"` for a
// fallback; empty when the node has no attributes.
std::string format_attrs(const Node& n);
// Doubles and floats in the shortest form that reads back to the same value, always with a
// '.', an exponent, inf or nan so that they read back as floating point.
std::string format_double(double v);
std::string format_float(float v);
std::string quote_string(std::string_view s);  // "..." with \" \\ \n escapes
// The call site as the trailing comment holds it: one line, trimmed.
std::string normalized_call_site(std::string_view s);

}  // namespace kiln::ir
