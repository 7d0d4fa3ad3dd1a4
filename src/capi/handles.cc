#include "capi/handles.h"

#include "capi/convert.h"

void attn_metadata::refresh() {
  const size_t n = core->size();
  if (views.size() != n) views.assign(n, attn_tensor_t{});
  for (size_t i = 0; i < n; ++i) {
    const attn::Field& f = core->field(i);
    if (f.kind == attn::FieldKind::kTensor) views[i] = attn::capi::from_tensor(f.tensor);
  }
}

namespace attn::capi {

const attn_metadata* live(const attn_metadata* m, const char* name) {
  if (m->current != nullptr) {
    const uint64_t now = m->current->load(std::memory_order_relaxed);
    if (now != m->generation)
      invalid(name, " is stale: it is result #", m->generation, " of a ", m->backend,
              " builder that has since published result #", now,
              " (a result is valid until the builder's next build; keep one with "
              "attn_metadata_clone)");
    if (m->source_current != nullptr &&
        m->source_current->load(std::memory_order_relaxed) != m->source_generation)
      invalid(name, " is stale: it is an update_block_table result sharing the fields of result #",
              m->source_generation, " of another ", m->backend,
              " builder, which has since built again");
  }
  return m->body;
}

}  // namespace attn::capi

attn_metadata* attn_builder::publish(const attn_metadata* source) {
  metadata.refresh();
  const uint64_t g = generation.load(std::memory_order_relaxed) + 1;
  generation.store(g, std::memory_order_relaxed);
  attn_metadata& t = tickets[g % kTickets];
  t.core = metadata.core;
  t.builder_owned = true;
  t.body = &metadata;
  t.current = &generation;
  t.generation = g;
  t.source_current = nullptr;
  t.source_generation = 0;
  // A result that shares another builder's fields goes stale with that builder's next build too.
  if (source != nullptr && source->current != nullptr && source->current != &generation) {
    t.source_current = source->current;
    t.source_generation = source->generation;
  }
  t.backend = impl->backend().name().c_str();
  return &t;
}
