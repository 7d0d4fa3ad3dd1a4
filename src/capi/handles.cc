#include "capi/handles.h"

#include "capi/convert.h"

void attn_metadata::reset_views() {
  const size_t n = core->size();
  // Grown only (a builder's plain and cascade metadata differ in size): switching allocates
  // once.
  if (views.size() < n) {
    views.assign(n, attn_tensor_t{});
    view_stamp = std::make_unique<std::atomic<uint64_t>[]>(n);
    for (size_t i = 0; i < n; ++i) view_stamp[i].store(0, std::memory_order_relaxed);
  }
  stamp.store(stamp.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

const attn_tensor_t* attn_metadata::view(size_t i) const {
  const uint64_t now = stamp.load(std::memory_order_acquire);
  if (view_stamp[i].load(std::memory_order_acquire) != now) {
    std::lock_guard<std::mutex> lock(view_mutex);
    if (view_stamp[i].load(std::memory_order_relaxed) != now) {
      views[i] = attn::capi::from_tensor(core->field(i).tensor);
      view_stamp[i].store(now, std::memory_order_release);
    }
  }
  return &views[i];
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
  metadata.core = &impl->metadata();  // the variant the build wrote (plain or cascade)
  metadata.reset_views();
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
