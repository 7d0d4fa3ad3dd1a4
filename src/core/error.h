// attn::Error, Status, fail, invalid, cat: defined in src/ops/error.h, the lowest C++ layer, so
// that ops and every layer above throw the same exception (src/capi maps it to attn_error_t).
#pragma once

#include "ops/error.h"
