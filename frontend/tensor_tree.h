// for_each_tensor: visits every Tensor inside a value built of Tensor, std::vector<Tensor>,
// std::tuple and std::pair; any other type (an int, a string, a config struct) is skipped.
// Custom Functions and checkpoint use it to find the tensors among mixed arguments and results.
#pragma once

#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "kiln/runtime/tensor.h"

namespace kiln::autograd {

namespace detail {
template <class T>
struct is_tuple_like : std::false_type {};
template <class... Ts>
struct is_tuple_like<std::tuple<Ts...>> : std::true_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
}  // namespace detail

template <class T, class F>
void for_each_tensor(T&& value, F&& f) {
  using D = std::remove_cvref_t<T>;
  if constexpr (std::is_same_v<D, Tensor>) {
    f(value);
  } else if constexpr (std::is_same_v<D, std::vector<Tensor>>) {
    for (auto& t : value)
      f(t);
  } else if constexpr (detail::is_tuple_like<D>::value) {
    std::apply([&](auto&... elems) { (for_each_tensor(elems, f), ...); }, value);
  }
}

}  // namespace kiln::autograd
