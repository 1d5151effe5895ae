// Autograd against float64 finite differences on the OpInfo samples (DESIGN.md testing layer 1),
// and the table-wide rule that every op has a derivative or is marked non-differentiable.
#include <cmath>
#include <set>

#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

using kiln::Tensor;

bool differentiable(const std::string& op_name) {
  const kiln::OpDef* op = kiln::OpTable::instance().find(op_name);
  return op != nullptr && !op->has(kiln::kNonDifferentiable) && !op->has(kiln::kRandom);
}

std::vector<std::string> differentiable_infos() {
  std::vector<std::string> names;
  for (const OpInfo& info : all_opinfos()) {
    for (const std::string& c : info.covers) {
      if (differentiable(c)) {
        names.push_back(info.name);
        break;
      }
    }
  }
  return names;
}

// A sample is checked in float64 when its floating inputs are float32 or float64 (the 16-bit
// samples would only repeat the same float64 check), finite (finite differences across inf or
// nan mean nothing), and small enough for a full Jacobian.
bool gradcheckable(const Sample& s) {
  if (s.check) return false;  // values no reference predicts (random, empty)
  bool any_float = false;
  for (const Tensor& t : s.inputs) {
    if (!kiln::is_floating(t.dtype())) continue;
    if ((t.dtype() != kiln::kFloat32 && t.dtype() != kiln::kFloat64) || t.numel() > 96) {
      return false;
    }
    for (double v : t.to_vector<double>())
      if (!std::isfinite(v)) return false;
    any_float = true;
  }
  return any_float;
}

class OpInfoGradcheck : public ::testing::TestWithParam<std::string> {};

TEST_P(OpInfoGradcheck, MatchesFiniteDifferences) {
  const OpInfo& info = find_opinfo(GetParam());
  int checked = 0;
  for (const Sample& s : info.samples()) {
    if (!s.gradcheck || !gradcheckable(s)) continue;
    SCOPED_TRACE(info.name + " / " + s.name);
    std::vector<Tensor> inputs;
    for (const Tensor& t : s.inputs) {
      if (kiln::is_floating(t.dtype())) {
        inputs.push_back(t.to(kiln::kFloat64).contiguous().requires_grad_());
      } else {
        inputs.push_back(t);
      }
    }
    // Outputs that are not finite, or rounded to 16 bits, have no meaningful finite differences.
    bool meaningful = true;
    for (const Tensor& out : s.call(inputs)) {
      if (!kiln::is_floating(out.dtype())) continue;
      if (kiln::element_size(out.dtype()) < 4) meaningful = false;
      for (double v : out.to_vector<double>())
        meaningful = meaningful && std::isfinite(v);
    }
    if (!meaningful) continue;
    try {
      kiln::autograd::gradcheck(s.call, inputs);
      ++checked;
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
  EXPECT_GT(checked, 0) << info.name << " has no sample small enough for gradcheck";
}

INSTANTIATE_TEST_SUITE_P(Ops, OpInfoGradcheck, ::testing::ValuesIn(differentiable_infos()),
                         opinfo_test_name);

TEST(DerivativeCoverage, EveryOpHasADerivativeOrIsMarkedNonDifferentiable) {
  for (const kiln::OpDef* op : kiln::OpTable::instance().ops()) {
    if (op->has(kiln::kNonDifferentiable)) continue;
    EXPECT_NE(op->derivative, nullptr)
        << "op '" << op->name << "' has no derivative and is not marked kNonDifferentiable";
  }
}

TEST(DerivativeCoverage, EveryDifferentiableOpIsGradchecked) {
  std::set<std::string> covered;
  for (const std::string& name : differentiable_infos()) {
    const OpInfo& info = find_opinfo(name);
    covered.insert(info.covers.begin(), info.covers.end());
  }
  for (const kiln::OpDef* op : kiln::OpTable::instance().ops()) {
    if (op->has(kiln::kNonDifferentiable) || op->has(kiln::kRandom)) continue;
    EXPECT_TRUE(covered.count(op->name)) << "op '" << op->name << "' is never gradchecked";
  }
}

}  // namespace
}  // namespace kiln_test
