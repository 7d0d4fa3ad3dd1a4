// The batch checks of the position-mapped builders (position_mapped_checks.h).
#include "backends/position_mapped_checks.h"

#include "core/error.h"

namespace attn::backends {

void check_position_mapped_batch(const CommonMetadata& c, const BuilderConfig& config,
                                 const char* who, const char* buffers) {
  if (!c.positions)
    invalid("common->positions is NULL; ", who, " maps every token by its position "
            "(vLLM asserts positions is not None)");
  const int64_t rows = c.slot_mapping->numel();
  if (rows > config.max_num_batched_tokens)
    invalid("common->slot_mapping has ", rows, " entries, more than "
            "config->max_num_batched_tokens=", config.max_num_batched_tokens, " (", who, "'s ",
            buffers, ")");
}

}  // namespace attn::backends
