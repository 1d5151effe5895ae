// Storage over memory Kiln did not allocate (NumPy arrays, DLPack producers): tensors and views
// read and write it in place, and the owner's release runs once, when the last one is gone.
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;

TEST(ExternalStorage, TensorsShareTheMemoryAndReleaseItOnce) {
  std::vector<float> buffer{1, 2, 3, 4, 5, 6};
  int released = 0;
  {
    kiln::Storage s = kiln::make_external_storage(buffer.data(), buffer.size() * sizeof(float),
                                                  kiln::kCPU, [&] { ++released; });
    Tensor t(std::make_shared<kiln::TensorImpl>(s, kiln::kFloat32, kiln::Shape{2, 3},
                                                kiln::Shape{3, 1}, 0));
    Tensor view = t.t();
    s.reset();
    t = Tensor();
    EXPECT_EQ(released, 0);  // the view still uses it
    EXPECT_EQ(view.contiguous().to_vector<float>(), (std::vector<float>{1, 4, 2, 5, 3, 6}));
    view.mul_(2);
    EXPECT_EQ(buffer[5], 12.0f);  // written in place
  }
  EXPECT_EQ(released, 1);
}

}  // namespace
}  // namespace kiln_test
