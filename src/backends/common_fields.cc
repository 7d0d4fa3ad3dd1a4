#include "backends/common_fields.h"

namespace attn::backends {

void set_passthrough(Metadata& m, size_t first, const CommonMetadata& c) {
  m.set_int(first + kPtNumActualTokens, c.num_actual_tokens);
  m.set_int(first + kPtMaxQueryLen, c.max_query_len);
  m.set_tensor(first + kPtQueryStartLoc, *c.query_start_loc);
  m.set_int(first + kPtMaxSeqLen, c.max_seq_len);
  m.set_tensor(first + kPtSeqLens, *c.seq_lens);
  m.set_tensor(first + kPtBlockTable, *c.block_table_tensor);
  m.set_tensor(first + kPtSlotMapping, *c.slot_mapping);
}

}  // namespace attn::backends
