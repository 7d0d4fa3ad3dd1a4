#include "backends/common_fields.h"

namespace attn::backends {

void add_passthrough_names(std::vector<std::string>& names) {
  for (const char* n : {"num_actual_tokens", "max_query_len", "query_start_loc", "max_seq_len",
                        "seq_lens", "block_table", "slot_mapping"})
    names.emplace_back(n);
}

void set_passthrough(Metadata& m, size_t first, const CommonMetadata& c) {
  size_t i = first;
  m.set_int(i++, c.num_actual_tokens);
  m.set_int(i++, c.max_query_len);
  m.set_tensor(i++, *c.query_start_loc);
  m.set_int(i++, c.max_seq_len);
  m.set_tensor(i++, *c.seq_lens);
  m.set_tensor(i++, *c.block_table_tensor);
  m.set_tensor(i++, *c.slot_mapping);
}

}  // namespace attn::backends
