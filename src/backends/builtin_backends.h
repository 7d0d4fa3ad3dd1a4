// The backends compiled into libattn, in the fixed order attn_backend_name() lists them.
#pragma once

namespace attn::backends {

/// Registers every built-in backend in attn::Registry once; later calls do nothing.
/// Thread-safe.
void register_builtin_backends();

}  // namespace attn::backends
