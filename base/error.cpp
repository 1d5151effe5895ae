#include "kiln/base/error.h"

namespace kiln::detail {

void throw_error(std::string message) {
  throw Error(std::move(message));
}

}  // namespace kiln::detail
