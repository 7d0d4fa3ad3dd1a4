// The definitions behind the ABI's opaque handles.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "attn_c.h"
#include "core/builder.h"
#include "core/metadata.h"

/// An error object. The out-of-memory fallback is a static instance (is_static) that
/// attn_error_destroy never frees.
struct attn_error {
  int32_t code = ATTN_OK;
  std::string message;
  bool is_static = false;
};

/// Metadata as the ABI sees it: a core Metadata (the builder's, or owned) plus attn_tensor_t
/// views of its tensor fields, each made when an accessor first reads it after a write.
///
/// A build does not hand out the builder's body itself but one of its tickets: a handle that
/// records the builder's generation (its count of published results) when it was handed out, and
/// points at the body. An accessor given a ticket whose generation is no longer the builder's
/// (a later build, capture, drafting build or update_block_table happened) fails with a message
/// instead of returning the newer data. Tickets are reused round-robin (kTickets per builder), so
/// a handle kept past kTickets - 1 later results is no longer detected (docs/reliability.md).
struct attn_metadata {
  attn::Metadata* core = nullptr;
  std::unique_ptr<attn::Metadata> owned;  ///< Set for caller-owned metadata.
  bool builder_owned = false;
  /// Made by own_common (a batch utility's result): attn_metadata_destroy may keep it for the
  /// next own_common of the same thread instead of freeing it (capi/owned_metadata.h).
  bool recyclable = false;

  // ABI views of the tensor fields, made when read (a build converts nothing): views[i] is
  // current when view_stamp[i] equals `stamp`, which a new result of the body changes.
  mutable std::vector<attn_tensor_t> views;             ///< One per field.
  std::unique_ptr<std::atomic<uint64_t>[]> view_stamp;  ///< One per field; 0 = never made.
  std::atomic<uint64_t> stamp{1};
  mutable std::mutex view_mutex;                        ///< Taken only to make a view.

  // Ticket state (builder-owned handles only; a body and caller-owned metadata keep the defaults).
  attn_metadata* body = this;                        ///< Where core and views live.
  const std::atomic<uint64_t>* current = nullptr;    ///< The builder's generation counter.
  uint64_t generation = 0;                           ///< *current when handed out.
  /// update_block_table's result shares the fields of another builder's metadata: that
  /// metadata's counter and generation (nullptr when the source is not builder-owned).
  const std::atomic<uint64_t>* source_current = nullptr;
  uint64_t source_generation = 0;
  const char* backend = "";                          ///< For messages.

  attn_metadata() = default;
  attn_metadata(const attn_metadata&) = delete;
  attn_metadata& operator=(const attn_metadata&) = delete;

  /// Sizes the views for `core`'s fields and marks them all stale (no allocation once sized).
  void reset_views();
  /// The ABI view of tensor field i of this body, made now if the body changed since the last
  /// one. Safe from any number of reading threads at once.
  const attn_tensor_t* view(size_t i) const;
};

namespace attn::capi {
/// The body behind a handle: `m` itself for caller-owned metadata, the builder's body for a live
/// ticket; Error(kInvalidArgument) naming `name` for a stale ticket.
const attn_metadata* live(const attn_metadata* m, const char* name);
}  // namespace attn::capi

struct attn_builder {
  static constexpr size_t kTickets = 64;
  std::unique_ptr<attn::Builder> impl;
  attn_metadata metadata;  ///< The body: builder_owned; core points at impl->metadata().
  std::atomic<uint64_t> generation{0};
  attn_metadata tickets[kTickets];
  /// attn_build's batch, converted in place each call (the builder serves one thread at a time,
  /// Builder::Use): a fresh CommonMetadata is ~4 KB to zero per call (issue 18).
  attn::CommonMetadata batch;

  /// Marks the body's views stale and hands out the next ticket (`source`: the metadata an
  /// update_block_table result shares fields with, else nullptr).
  attn_metadata* publish(const attn_metadata* source);
};

namespace attn::capi {
class PluginLibrary;
}

struct attn_plugin {
  std::shared_ptr<attn::capi::PluginLibrary> library;
  std::string name;
};
