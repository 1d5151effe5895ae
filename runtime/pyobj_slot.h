// The slot through which a C++ object (TensorImpl, autograd::Node) knows its Python wrapper,
// for a binding that keeps one wrapper per object (frontend/python). The runtime never looks at
// what the slot holds.
//
// Note [Python object slot]
// The slot holds the live wrapper, or null. Normally the wrapper owns a handle to the C++
// object and the slot does not own the wrapper: the wrapper sets the slot when it is made and
// clears it when it is freed, and whoever returns the object to Python returns the wrapper in
// the slot, so Python sees one object per tensor (x.grad is x.grad). When Python drops its last
// reference while C++ still holds the object (a saved tensor, a .grad, a Node in a graph), the
// binding keeps the wrapper instead of freeing it (PyObject preservation, as PyTorch does): the
// wrapper gives up its handle and the slot takes its one reference (take_ownership), so
// attributes set on the wrapper survive and the next return to Python gives the same object
// back (give_ownership_back). A slot that owns its wrapper releases it, through the function
// the binding registered, when the C++ object is destroyed.
#pragma once

namespace kiln {

class PyObjectSlot {
 public:
  using ReleaseFn = void (*)(void* wrapper);

  PyObjectSlot() = default;
  PyObjectSlot(const PyObjectSlot&) = delete;
  PyObjectSlot& operator=(const PyObjectSlot&) = delete;
  ~PyObjectSlot();

  void* get() const { return wrapper_; }
  bool owns_wrapper() const { return owned_; }
  // The live wrapper (not owned), or null when it is freed.
  void set(void* wrapper) {
    wrapper_ = wrapper;
    owned_ = false;
  }
  void take_ownership() { owned_ = true; }
  void give_ownership_back() { owned_ = false; }

  // Set once by the binding; drops a wrapper reference on any thread (it takes the GIL).
  static void set_release(ReleaseFn fn);

 private:
  void* wrapper_ = nullptr;
  bool owned_ = false;
};

}  // namespace kiln
