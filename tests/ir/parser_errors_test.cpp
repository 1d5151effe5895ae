// Malformed IR texts: each throws kiln::Error naming the line, the column and what was
// expected there.
#include <gtest/gtest.h>

#include <string>

#include "kiln/base/error.h"
#include "kiln/ir/parser.h"

namespace kiln::ir {
namespace {

struct BadText {
  const char* name;
  std::string text;
  int line;
  int column;
  const char* message;  // a substring of what follows "column C: "
};

constexpr const char* kHeader = "graph(%x : f32[2]):\n";

std::string with_node(const std::string& node_line) {
  return kHeader + node_line + "\n  return (%0)\n";
}

std::string nested_fusion_groups(int levels) {
  std::string s = "graph(%x : f32[2]):\n";
  for (int i = 0; i < levels; ++i)
    s += "%0 : f32[2] = prim.fusion_group(%x)\ngraph(%x : f32[2]):\n";
  s += "return (%x)\n";
  for (int i = 0; i < levels; ++i)
    s += "return (%0)\n";
  return s;
}

std::vector<BadText> bad_texts() {
  return {
      {"missing_paren", with_node("  %0 : f32[2] = add(%x %x)"), 2, 24,
       "expected ')' after the inputs of 'add', found '%x'"},
      {"type_without_sizes", "graph(%x : f32):\n  return (%x)\n", 1, 15,
       "expected '[' to start the sizes of a type, found ')'"},
      {"unknown_dtype", "graph(%x : f33[2]):\n  return (%x)\n", 1, 12,
       "unknown dtype 'f33'; expected one of b8, i32, i64, f16, bf16, f32, f64"},
      {"unknown_op", with_node("  %0 : f32[2] = ad(%x)"), 2, 17, "unknown op 'ad'"},
      {"unknown_attribute", with_node("  %0 : f32[2] = transpose(%x) {dim2=1}"), 2, 32,
       "unknown attribute 'dim2' of 'transpose'; expected one of: dim0, dim1"},
      {"attribute_of_op_without_any", with_node("  %0 : f32[2] = relu(%x) {alpha=1}"), 2, 27,
       "unknown attribute 'alpha': 'relu' has no attributes"},
      {"float_for_int_field", with_node("  %0 : f32[2] = transpose(%x) {dim0=1.5}"), 2, 37,
       "expected an integer for 'dim0' of 'transpose', found '1.5'"},
      {"int_for_bool_field", with_node("  %0 : f32[2] = sum(%x) {keepdim=1}"), 2, 34,
       "expected true or false for 'keepdim' of 'sum', found '1'"},
      {"bad_dtype_value", with_node("  %0 : f32[2] = convert(%x) {dtype=f128}"), 2, 36,
       "expected a dtype (b8, i32, i64, f16, bf16, f32, f64) for 'dtype' of 'convert', found "
       "'f128'"},
      {"duplicate_attribute", with_node("  %0 : f32[2] = transpose(%x) {dim0=1, dim0=2}"), 2, 40,
       "attribute 'dim0' of 'transpose' is given twice"},
      {"undefined_value", with_node("  %0 : f32[2] = relu(%y)"), 2, 22,
       "undefined value '%y': no node of this graph defines it"},
      {"undefined_first_use_wins",
       kHeader + std::string("  %0 : f32[2] = add(%b, %a)\n  %1 : f32[2] = relu(%a)\n") +
           "  return (%0)\n",
       2, 21, "undefined value '%b'"},
      {"undefined_in_return", kHeader + std::string("  return (%nope)\n"), 2, 11,
       "undefined value '%nope' in the return list"},
      {"redefinition",
       kHeader + std::string("  %0 : f32[2] = relu(%x)\n  %0 : f32[2] = relu(%x)\n") +
           "  return (%0)\n",
       3, 3, "redefinition of '%0' (first defined at line 2, column 3)"},
      {"input_redefined", "graph(%x : f32[2], %x : f32[2]):\n  return (%x)\n", 1, 20,
       "redefinition of '%x' (first defined at line 1, column 7)"},
      {"constant_element_count", with_node("  %0 : f32[2] = prim.constant() {value=[1.0]}"), 2, 44,
       "expected 2 elements for a constant of type f32[2], found 1"},
      {"constant_too_many_elements",
       with_node("  %0 : f32[2] = prim.constant() {value=[1.0, 2.0, 3.0]}"), 2, 51,
       "expected 2 elements for a constant of type f32[2], found more"},
      {"constant_wrong_element_kind", with_node("  %0 : i64[2] = prim.constant() {value=[1, 2.5]}"),
       2, 44, "expected an element of dtype i64 for the constant, found '2.5'"},
      {"constant_without_value", with_node("  %0 : f32[2] = prim.constant()"), 3, 3,
       "expected '{value=[...]}' for a constant of type f32[2], found 'return'"},
      {"meta_constant_with_value", with_node("  %0 : f32[1] meta = prim.constant() {value=[1.0]}"),
       2, 39, "expected no 'value' for a meta constant"},
      {"strided_constant",
       with_node("  %0 : f32[2, 2] strided[1, 2] = prim.constant() {value=[1, 2, 3, 4]}"), 2, 3,
       "expected a contiguous type: a constant is never strided"},
      {"huge_constant", with_node("  %0 : f32[100000, 100000] = prim.constant() {value=[]}"), 2, 53,
       "expected a constant with at most 67108864 elements"},
      {"truncated", std::string(kHeader) + "  %0 : f32[2] = relu(", 2, 22,
       "expected a value '%name' in the inputs of 'relu', found end of input"},
      {"missing_return", std::string(kHeader) + "  %0 : f32[2] = relu(%x)\n", 3, 1,
       "expected a node or 'return', found end of input"},
      {"empty_input", "", 1, 1, "expected 'graph' to start a graph, found end of input"},
      {"garbage_bytes", std::string(kHeader) + "  \x01\xff\xfe", 2, 3,
       "unexpected character '\\x01'"},
      {"trailing_text", with_node("  %0 : f32[2] = relu(%x)") + "extra", 4, 1,
       "expected end of input after the graph's return, found 'extra'"},
      {"unterminated_string", with_node("  %0 : f32[2] = gelu(%x) {approximate=\"tanh"), 2, 39,
       "unterminated string: expected a closing '\"' on the same line"},
      {"bad_escape", with_node("  %0 : f32[2] = gelu(%x) {approximate=\"a\\tb\"}"), 2, 41,
       "expected an escape \\\", \\\\ or \\n in a string, found '\\t'"},
      {"integer_overflow", "graph(%x : f32[99999999999999999999]):\n  return (%x)\n", 1, 16,
       "expected an integer that fits in int64 for the sizes of a type"},
      {"type_too_large", "graph(%x : f32[4294967296, 4294967296]):\n  return (%x)\n", 1, 15,
       "expected a type with at most"},
      {"negative_size", "graph(%x : f32[2, -1]):\n  return (%x)\n", 1, 15,
       "expected non-negative sizes in a type, found [2, -1]"},
      {"stride_count", "graph(%x : f32[2, 3] strided[1]):\n  return (%x)\n", 1, 29,
       "expected 2 strides for sizes [2, 3], found 1"},
      {"bad_device_index", "graph(%x : f32[2] cuda:99999):\n  return (%x)\n", 1, 24,
       "expected a CUDA device index in [0, 32767], found 99999"},
      {"empty_value_name", "graph(% : f32[2]):\n  return (%x)\n", 1, 7,
       "expected a value name (%identifier or %N) after '%', found ' '"},
      {"digits_then_letters", "graph(%1a : f32[2]):\n  return (%1a)\n", 1, 7,
       "expected a value name (%identifier or %N) after '%', found '%1a'"},
      {"missing_equals", with_node("  %0 : f32[2] relu(%x)"), 2, 15,
       "expected ',' or '=' after a node output, found 'relu'"},
      {"bad_exponent", with_node("  %0 : f32[2] = add_scalar(%x) {other=1e}"), 2, 41,
       "expected the digits of an exponent"},
      {"nesting_too_deep", nested_fusion_groups(70), 129, 1,
       "fusion groups nest deeper than 64 levels"},
  };
}

class ParserErrors : public ::testing::TestWithParam<BadText> {};

TEST_P(ParserErrors, NamesLineColumnAndExpectation) {
  const BadText& c = GetParam();
  try {
    parse(c.text);
    FAIL() << "parsed without an error:\n" << c.text;
  } catch (const Error& e) {
    std::string want = "parse error at line " + std::to_string(c.line) + ", column " +
                       std::to_string(c.column) + ": ";
    std::string got = e.what();
    EXPECT_EQ(got.rfind(want, 0), 0u) << got;
    EXPECT_NE(got.find(c.message), std::string::npos) << got;
  }
}

INSTANTIATE_TEST_SUITE_P(IrText, ParserErrors, ::testing::ValuesIn(bad_texts()),
                         [](const ::testing::TestParamInfo<BadText>& p) {
                           return std::string(p.param.name);
                         });

TEST(IrTextErrors, DeepButAllowedNestingParses) {
  EXPECT_NO_THROW(parse(nested_fusion_groups(63)));
}

TEST(IrTextErrors, UnknownOpSuggestsANearName) {
  try {
    parse(with_node("  %0 : f32[2] = trnaspose(%x)"));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown op 'trnaspose' (did you mean 'transpose'?)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace kiln::ir
