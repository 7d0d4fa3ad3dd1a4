// The vLLM release libattn matches, for the layers below the C ABI (backends report it through
// Backend::vllm_release()). The public spelling is ATTN_VLLM_RELEASE in include/attn_c.h;
// src/capi/version_api.cc fails to compile when the two disagree.
#pragma once

namespace attn {

inline constexpr char kVllmRelease[] = "0.33.0";
inline constexpr unsigned kVllmReleaseMajor = 0;
inline constexpr unsigned kVllmReleaseMinor = 33;
inline constexpr unsigned kVllmReleasePatch = 0;

}  // namespace attn
