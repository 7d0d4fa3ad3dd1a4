// TRITON_MLA's builder (vLLM 0.33's TritonMLAMetadataBuilder, mla_triton.cc), which
// DOTS3_NOTE_TRITON_MLA's (mla_dots3_note.cc) subclasses as vLLM's does.
#pragma once

#include <string>

#include "backends/mla_common.h"

namespace attn::backends {

class TritonMlaBuilder : public MlaCommonBuilder {
 public:
  using MlaCommonBuilder::MlaCommonBuilder;

  /// supports_draft_decode_metadata_update: without DCP (DCP-local lengths are not advanced
  /// between draft steps); the update itself is the base's no-op.
  std::string draft_decode_update_refusal() const override;
};

}  // namespace attn::backends
