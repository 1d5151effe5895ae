// OpInfo: the op-by-op test table (in the spirit of PyTorch's OpInfo). Each public op registers
// an OpInfo with sample inputs and an independent reference written in the test (loops over
// doubles). op_info_test.cpp runs every sample against its reference, and fails when an entry of
// the op table is covered by no OpInfo. Later suites (gradcheck, tracing, compiled backends)
// reuse the same samples.
//
// Registering, in a tests/opinfo/<family>_opinfo.cpp:
//
//   KILN_REGISTER_OPINFO(exp_info, [] {
//     OpInfo info{"exp", {"exp"}};
//     info.samples = [] { return unary_samples(..); };
//     return info;
//   }());
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "test_util.h"

namespace kiln_test {

// A tensor as the reference sees it: row-major doubles (bools as 0/1), its shape and dtype.
struct RefTensor {
  kiln::Shape sizes;
  std::vector<double> data;
  kiln::DType dtype = kiln::kFloat32;

  int64_t numel() const { return static_cast<int64_t>(data.size()); }
  double at(const Index& idx) const;  // row-major multi-index
};

RefTensor to_ref(const kiln::Tensor& t);  // reads the tensor's own dtype; no conversion op

using CallFn = std::function<std::vector<kiln::Tensor>(const std::vector<kiln::Tensor>&)>;
using RefFn = std::function<std::vector<RefTensor>(const std::vector<RefTensor>&)>;
// For outputs whose values no formula predicts (empty, or where only a property can be
// checked): inspects the outputs, reporting failures with EXPECT_*.
using CheckFn = std::function<void(const std::vector<kiln::Tensor>& inputs,
                                   const std::vector<kiln::Tensor>& outputs)>;

struct Sample {
  std::string name;  // what the sample exercises: "broadcast", "transposed", "size0", ...
  std::vector<kiln::Tensor> inputs;
  CallFn call;
  RefFn reference;  // exactly one of reference and check
  CheckFn check;
  double rtol = -1;  // < 0: the default for the output dtype (see default_tolerance)
  double atol = -1;
  // false where finite differences are not the op's gradient: index_put without accumulate
  // onto repeated positions, where only the last write reaches the output (torch's formula,
  // like Kiln's, still gives each duplicate the gradient).
  bool gradcheck = true;
};

// A sample compared against a reference.
Sample make_sample(std::string name, std::vector<kiln::Tensor> inputs, CallFn call, RefFn ref);

struct OpInfo {
  std::string name;                 // the public function
  std::vector<std::string> covers;  // the op-table entries its samples reach
  std::function<std::vector<Sample>()> samples;
};

void register_opinfo(OpInfo info);
const std::vector<OpInfo>& all_opinfos();

#define KILN_REGISTER_OPINFO(ident, ...) \
  static const bool ident##_registered = (::kiln_test::register_opinfo(__VA_ARGS__), true)

// "2x3" (or "scalar" for a 0-dim shape), for sample names.
std::string shape_name(const kiln::Shape& s);

// ---- for the suites that run every OpInfo (one parameterized test per OpInfo) ----

const OpInfo& find_opinfo(const std::string& name);  // throws for an unknown name
// Whether any op-table entry `info` covers has `flag` (kRandom, kNonTraceable, ...).
bool covers_op_with(const OpInfo& info, kiln::OpFlag flag);
std::vector<std::string> opinfo_names();
// The OpInfo's name with every non-alphanumeric character replaced, as gtest requires.
std::string opinfo_test_name(const ::testing::TestParamInfo<std::string>& info);

// Runs check(sample) on each of the OpInfo's samples under a trace naming it; an exception a
// check throws fails that sample and the next one runs.
void for_each_sample(const OpInfo& info, const std::function<void(const Sample&)>& check);

// Same definedness, dtype, shape and bits (every NaN equals every NaN): for paths that run the
// same kernels as eager code (the interpreter, compiled plans), where close is not enough.
::testing::AssertionResult identical(const kiln::Tensor& got, const kiln::Tensor& want);

// For compiled code, whose fused reductions sum in their own order and whose pointwise math may
// contract multiply-adds differently: a floating `got` whose every element is within the
// tolerances of the output's dtype or of `computed_in` (the sample's least precise floating
// input), relative to the element and to the tensor's largest magnitude.
::testing::AssertionResult within_compiled_tolerance(const kiln::Tensor& got,
                                                     const kiln::Tensor& want,
                                                     kiln::DType computed_in);
// The least precise floating dtype among `inputs` (Float64 when none is floating).
kiln::DType least_precise_floating(const std::vector<kiln::Tensor>& inputs);

// `t` scaled by `factor` (then converted back to t's dtype), in a new storage laid out exactly
// like t's (same strides and offset):
// a graph is traced and a plan compiled for their inputs' layouts (reshape copies or views
// depending on them, BLAS picks its path from them), so other values must keep the layout.
kiln::Tensor scaled_same_layout(const kiln::Tensor& t, double factor);

// Runs a traced graph node by node on `inputs`, each op node through `run_op` (which returns its
// outputs), so that a test can look at every op call a sample makes, composites' included.
using RunOpFn = std::function<std::vector<kiln::Tensor>(const kiln::ir::Node& node,
                                                        const std::vector<kiln::Tensor>& args)>;
void replay_graph(const kiln::ir::Graph& g, const std::vector<kiln::Tensor>& inputs,
                  const RunOpFn& run_op);

// Tolerances for comparing an output of dtype t with a double reference.
std::pair<double, double> default_tolerance(kiln::DType t);

// ---- sample inputs ----

// Operand dtypes of a binary sample and the dtype of its result.
struct DTypeTriple {
  kiln::DType a, b, out;
};

// Note [OpInfo integer dtypes]
// The integer dtypes that every integer-capable op's samples run on: int32 and int64, and the
// small integers uint8, int8 and int16 (Note [Small integer dtypes] in base/dtype.h).
// make_input keeps the part of a sample range that a small dtype holds, and round_to wraps a
// reference value into it, so an entry's ranges and references serve every dtype here.
inline const std::vector<kiln::DType> kIntegerDTypes = {kiln::kInt32, kiln::kInt64, kiln::kUInt8,
                                                        kiln::kInt8, kiln::kInt16};
// Mixed operands of the small integers and their promoted dtype (torch.promote_types).
inline const std::vector<DTypeTriple> kSmallIntMixedTriples = {
    {kiln::kUInt8, kiln::kInt8, kiln::kInt16},      {kiln::kInt8, kiln::kInt16, kiln::kInt16},
    {kiln::kUInt8, kiln::kInt32, kiln::kInt32},     {kiln::kInt16, kiln::kInt64, kiln::kInt64},
    {kiln::kUInt8, kiln::kFloat32, kiln::kFloat32}, {kiln::kInt8, kiln::kFloat16, kiln::kFloat16},
};

// How a sample input is laid out in memory. The logical shape is the same for all of them.
enum class Layout {
  Contiguous,
  Transposed,  // the last two dims are swapped in memory (a .transpose view)
  Strided,     // the last dim is a step-2 slice of a twice-as-wide tensor
};
const char* layout_name(Layout l);

// A tensor of `sizes` and `dtype` with values uniform in [lo, hi] (integers for integer
// dtypes, 0/1 for bool), laid out as `layout`. `seed` varies the values.
kiln::Tensor make_input(const kiln::Shape& sizes, kiln::DType dtype, Layout layout, double lo,
                        double hi, uint32_t seed);

// ---- reference building blocks ----

// out[i] = f(x[i]), with dtype `out_dtype`.
RefTensor ref_map(const RefTensor& x, kiln::DType out_dtype,
                  const std::function<double(double)>& f);
// out[i] = f(a[bcast i], b[bcast i]) over the broadcast shape.
RefTensor ref_zip(const RefTensor& a, const RefTensor& b, kiln::DType out_dtype,
                  const std::function<double(double, double)>& f);
// The values to rounded to dtype t (float32 rounding, half rounding, integer truncation, bool),
// as the library's result would hold them.
double round_to(double v, kiln::DType t);
// Reduction over `dims` (empty: all) with keepdim: reduce(values along the reduced dims)
// for each kept index. `reduce` sees the reduced elements in row-major order.
RefTensor ref_reduce(const RefTensor& x, const kiln::Shape& dims, bool keepdim,
                     kiln::DType out_dtype,
                     const std::function<double(const std::vector<double>&)>& reduce);

// Shapes that every pointwise op's samples cover: plain, size 1 dims, a size 0 dim, 0-dim.
std::vector<kiln::Shape> pointwise_shapes();

// Samples for a unary pointwise op over the given dtypes, every layout and pointwise_shapes();
// `out_dtype` maps the input dtype to the expected output dtype.
std::vector<Sample> unary_samples(const std::function<kiln::Tensor(const kiln::Tensor&)>& op,
                                  const std::function<double(double)>& ref,
                                  const std::vector<kiln::DType>& dtypes, double lo, double hi,
                                  const std::function<kiln::DType(kiln::DType)>& out_dtype);

// Samples for a binary pointwise op: same shapes, broadcasting pairs (incl. 0-dim and size 0),
// non-contiguous operands, and mixed dtypes when `mixed` lists (a, b, expected) triples.
std::vector<Sample> binary_samples(
    const std::function<kiln::Tensor(const kiln::Tensor&, const kiln::Tensor&)>& op,
    const std::function<double(double, double)>& ref, const std::vector<DTypeTriple>& dtypes,
    double lo, double hi, double b_lo, double b_hi);

}  // namespace kiln_test

namespace kiln_test {

// ---- additions for ternary and in-place samples ----

// out[i] = f(a[bcast i], b[bcast i], c[bcast i]) over the broadcast of the three shapes.
RefTensor ref_zip3(const RefTensor& a, const RefTensor& b, const RefTensor& c,
                   kiln::DType out_dtype, const std::function<double(double, double, double)>& f);

// A fresh tensor with t's values, laid out as `layout` (Transposed needs 2+ dims, Strided 1+;
// otherwise contiguous). For in-place samples, which must not modify their inputs: the call
// applies the op to such a copy.
kiln::Tensor copy_with_layout(const kiln::Tensor& t, Layout layout);

}  // namespace kiln_test
