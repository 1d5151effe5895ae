// What the Python package relies on in the runtime: a ForeignError crosses the engine unchanged
// (the Python exception it carries is raised again), the pyobj slots, and the live-object
// counters its leak tests read.
#include "kiln/runtime/autograd/autograd_meta.h"
#include "test_util.h"

namespace kiln_test {
namespace {

using kiln::Tensor;

struct UserError : kiln::ForeignError {
  explicit UserError(int c) : code(c) {}
  int code;
};

TEST(BindingSupport, ForeignErrorFromAHookCrossesTheEngineUnchanged) {
  Tensor x = kiln::ones({2}, kiln::requires_grad());
  Tensor y = x * 2;
  y.register_hook([](const Tensor&) -> Tensor { throw UserError(42); });
  try {
    y.sum().backward();
    FAIL() << "backward did not throw";
  } catch (const UserError& e) {
    EXPECT_EQ(e.code, 42);  // the same object type, not a kiln::Error naming the Node
  } catch (const std::exception& e) {
    FAIL() << "got another exception: " << e.what();
  }
  (x * 3).sum().backward();  // the engine is usable afterwards
  EXPECT_EQ(x.grad().to_vector<float>(), (std::vector<float>{3, 3}));
}

TEST(BindingSupport, OtherErrorsStillNameTheNode) {
  Tensor x = kiln::ones({2}, kiln::requires_grad());
  Tensor y = x.exp();
  y.register_hook([](const Tensor&) -> Tensor { throw std::runtime_error("plain"); });
  EXPECT_TRUE(throws_error_containing([&] { y.sum().backward(); }, {"plain", "Exp"}));
}

TEST(BindingSupport, PyobjSlotsStartEmptyAndHoldWhatIsSet) {
  Tensor x = kiln::ones({2}, kiln::requires_grad());
  Tensor y = x * 2;
  EXPECT_EQ(x.impl()->pyobj(), nullptr);
  EXPECT_EQ(y.grad_fn()->pyobj(), nullptr);
  int marker = 0;
  x.impl()->pyobj_slot().set(&marker);
  EXPECT_EQ(x.detach().impl()->pyobj(), nullptr);  // another TensorImpl, another slot
  EXPECT_EQ(x.impl()->pyobj(), &marker);
  x.impl()->pyobj_slot().set(nullptr);
}

std::vector<void*> g_released;

TEST(BindingSupport, ASlotReleasesOnlyAWrapperItOwns) {
  kiln::PyObjectSlot::set_release([](void* w) { g_released.push_back(w); });
  int kept = 0, owned = 0;
  {
    Tensor a = kiln::ones({1});
    a.impl()->pyobj_slot().set(&kept);  // the wrapper owns the tensor: nothing to release
    Tensor b = kiln::ones({1});
    b.impl()->pyobj_slot().set(&owned);
    b.impl()->pyobj_slot().take_ownership();  // preserved: the tensor owns the wrapper
  }
  kiln::PyObjectSlot::set_release(nullptr);
  EXPECT_EQ(g_released, (std::vector<void*>{&owned}));
}

TEST(BindingSupport, LiveCountersFollowTensorsAndNodes) {
  int64_t tensors = kiln::TensorImpl::live_count();
  int64_t nodes = kiln::autograd::Node::live_count();
  {
    Tensor x = kiln::ones({2}, kiln::requires_grad());
    Tensor y = (x * 2).exp();  // Nodes: x's AccumulateGrad, MulScalar, Exp
    EXPECT_GE(kiln::TensorImpl::live_count(), tensors + 2);
    EXPECT_EQ(kiln::autograd::Node::live_count(), nodes + 3);
  }
  EXPECT_EQ(kiln::TensorImpl::live_count(), tensors);
  EXPECT_EQ(kiln::autograd::Node::live_count(), nodes);
}

}  // namespace
}  // namespace kiln_test
