// kiln::optim: SGD, Adam and AdamW (frontend/optim/).
#pragma once

#include "kiln/frontend/optim/adam.h"
#include "kiln/frontend/optim/optimizer.h"
#include "kiln/frontend/optim/sgd.h"
