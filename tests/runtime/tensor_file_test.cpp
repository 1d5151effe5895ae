// save_tensors / load_tensors round-trip every dtype bit for bit, and a damaged file is an
// error naming the file, never a crash or a huge allocation.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "kiln/kiln.h"

namespace kiln_test {
namespace {

using kiln::Tensor;
namespace fs = std::filesystem;

fs::path temp(const char* name) {
  return fs::temp_directory_path() /
         (std::string("kiln_tf_") + std::to_string(::getpid()) + "_" + name);
}

TEST(TensorFile, RoundTripsEveryDtypeBitForBit) {
  kiln::manual_seed(3);
  kiln::TensorFile f;
  f.meta = {{"kind", "test"}, {"n", "7"}};
  Tensor base = kiln::randn({3, 4});
  for (kiln::DType t : {kiln::kFloat32, kiln::kFloat64, kiln::kFloat16, kiln::kBFloat16,
                        kiln::kInt32, kiln::kInt64, kiln::kBool})
    f.tensors.push_back(t == kiln::kBool ? base.gt(0) : base.mul(7).to(t));
  f.tensors.push_back(base.t());             // non-contiguous: stored by value
  f.tensors.push_back(kiln::randn({0, 5}));  // empty
  f.tensors.push_back(kiln::full({}, 2.5));  // scalar
  fs::path p = temp("roundtrip");
  kiln::save_tensors(p.string(), f);
  kiln::TensorFile g = kiln::load_tensors(p.string());
  EXPECT_EQ(g.meta_value("kind"), "test");
  EXPECT_EQ(g.meta_value("n"), "7");
  EXPECT_EQ(g.meta_value("absent", "x"), "x");
  ASSERT_EQ(g.tensors.size(), f.tensors.size());
  for (size_t i = 0; i < f.tensors.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_EQ(g.tensors[i].dtype(), f.tensors[i].dtype());
    ASSERT_EQ(g.tensors[i].sizes(), f.tensors[i].sizes());
    Tensor want = f.tensors[i].contiguous();
    ASSERT_EQ(0, std::memcmp(g.tensors[i].raw_data(), want.raw_data(),
                             static_cast<size_t>(want.numel()) * want.element_size()));
  }
  fs::remove(p);
}

TEST(TensorFile, DamagedFilesAreErrorsNamingTheFile) {
  fs::path p = temp("damaged");
  kiln::TensorFile f;
  f.tensors = {kiln::ones({1000})};
  kiln::save_tensors(p.string(), f);
  auto expect_error = [&](const std::string& content, const std::string& message) {
    std::ofstream(p, std::ios::binary) << content;
    try {
      (void)kiln::load_tensors(p.string());
      ADD_FAILURE() << "no error for: " << content.substr(0, 60);
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find(p.string()), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  std::string good;
  {
    std::ifstream in(p, std::ios::binary);
    good.assign(std::istreambuf_iterator<char>(in), {});
  }
  expect_error("not a tensor file\n", "is not a tensor file");
  expect_error(good.substr(0, good.size() / 2), "truncated");
  expect_error("kiln-tensors 1\ntensor float32 2 100000000 100000000\n", "larger than the rest");
  expect_error("kiln-tensors 1\ntensor complex 1 2\n", "unknown dtype 'complex'");
  expect_error("kiln-tensors 1\n", "truncated");
  fs::remove(p);
  EXPECT_THROW((void)kiln::load_tensors(p.string()), kiln::Error);
  kiln::TensorFile bad;
  bad.meta = {{"has space", "v"}};
  EXPECT_THROW(kiln::save_tensors(temp("bad").string(), bad), kiln::Error);
}

}  // namespace
}  // namespace kiln_test
