// Runs every OpInfo sample against its reference, and checks that the op table has no entry
// without samples.
#include <set>

#include "kiln/runtime/op_table.h"
#include "opinfo/op_info.h"

namespace kiln_test {
namespace {

class OpInfoSamples : public ::testing::TestWithParam<std::string> {};

TEST_P(OpInfoSamples, MatchReference) {
  const OpInfo& info = find_opinfo(GetParam());
  std::vector<Sample> samples = info.samples();
  ASSERT_FALSE(samples.empty()) << info.name << " has no samples";
  for (const Sample& s : samples) {
    SCOPED_TRACE(info.name + " / " + s.name);
    ASSERT_TRUE(static_cast<bool>(s.reference) != static_cast<bool>(s.check))
        << "a sample needs exactly one of reference and check";
    std::vector<RefTensor> ref_inputs;
    for (const kiln::Tensor& t : s.inputs)
      ref_inputs.push_back(to_ref(t));
    std::vector<kiln::Tensor> outputs;
    try {
      outputs = s.call(s.inputs);
    } catch (const std::exception& e) {
      ADD_FAILURE() << "threw: " << e.what();
      continue;
    }
    // Inputs are never modified by an out-of-place op (in-place samples check their own).
    if (s.check) {
      s.check(s.inputs, outputs);
      continue;
    }
    std::vector<RefTensor> expected = s.reference(ref_inputs);
    ASSERT_EQ(outputs.size(), expected.size());
    for (size_t i = 0; i < outputs.size(); ++i) {
      SCOPED_TRACE("output " + std::to_string(i));
      RefTensor actual = to_ref(outputs[i]);
      EXPECT_EQ(actual.sizes, expected[i].sizes);
      EXPECT_EQ(actual.dtype, expected[i].dtype);
      auto [rtol, atol] = default_tolerance(expected[i].dtype);
      if (s.rtol >= 0) rtol = s.rtol;
      if (s.atol >= 0) atol = s.atol;
      EXPECT_ALL_CLOSE(actual.data, expected[i].data, rtol, atol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, OpInfoSamples, ::testing::ValuesIn(opinfo_names()), opinfo_test_name);

TEST(OpInfoCoverage, EveryTableOpHasSamples) {
  std::set<std::string> covered;
  for (const OpInfo& info : all_opinfos())
    covered.insert(info.covers.begin(), info.covers.end());
  for (const kiln::OpDef* op : kiln::OpTable::instance().ops()) {
    EXPECT_TRUE(covered.count(op->name)) << "op '" << op->name << "' has no OpInfo samples";
  }
  // And every name an OpInfo claims to cover is a real op.
  for (const std::string& name : covered) {
    EXPECT_NE(kiln::OpTable::instance().find(name), nullptr) << name << " is not in the op table";
  }
}

TEST(OpInfoCoverage, NamesAreUnique) {
  std::set<std::string> names;
  for (const OpInfo& info : all_opinfos()) {
    EXPECT_TRUE(names.insert(info.name).second) << info.name << " registered twice";
  }
}

}  // namespace
}  // namespace kiln_test
