// Built against an installed Kiln: uses only <kiln/kiln.h>. Exits non-zero on a wrong answer.
#include <kiln/kiln.h>

#include <iostream>

int main() {
  kiln::Tensor a = kiln::arange(6, kiln::kFloat32).view({2, 3});
  kiln::Tensor b = kiln::ones({3, 2});
  std::vector<float> c = kiln::matmul(a, b).to_vector<float>();
  // Row sums of [[0,1,2],[3,4,5]]: 3 and 12, in both columns.
  bool ok = c == std::vector<float>{3, 3, 12, 12};
  try {
    (void)kiln::add(kiln::ones({2}), kiln::ones({3}));
    ok = false;
  } catch (const kiln::Error&) {
  }
  std::cout << (ok ? "consumer: ok" : "consumer: WRONG") << "\n";
  return ok ? 0 : 1;
}
