//! [`CascadeQuery`]: the inputs of vLLM's `use_cascade_attention` (`attn_cascade_query_t`).
use crate::sys;

/// A batch description for [`crate::Builder::use_cascade_attention`].
#[derive(Clone, Copy, Debug)]
pub struct CascadeQuery<'a> {
    /// Tokens shared by every request.
    pub common_prefix_len: i64,
    /// Query length of every request.
    pub query_lens: &'a [i32],
    /// Query heads (> 0).
    pub num_query_heads: i32,
    /// KV heads (> 0).
    pub num_kv_heads: i32,
    /// ALiBi in use.
    pub use_alibi: bool,
    /// A sliding window in use.
    pub use_sliding_window: bool,
    /// Chunked local attention in use.
    pub use_local_attention: bool,
    /// Streaming multiprocessors of the GPU (> 0).
    pub num_sms: i32,
    /// DCP world size (>= 1).
    pub dcp_world_size: i32,
}

impl<'a> CascadeQuery<'a> {
    /// A query without ALiBi, window, local attention or DCP.
    pub fn new(
        common_prefix_len: i64,
        query_lens: &'a [i32],
        num_query_heads: i32,
        num_kv_heads: i32,
        num_sms: i32,
    ) -> CascadeQuery<'a> {
        CascadeQuery {
            common_prefix_len,
            query_lens,
            num_query_heads,
            num_kv_heads,
            use_alibi: false,
            use_sliding_window: false,
            use_local_attention: false,
            num_sms,
            dcp_world_size: 1,
        }
    }

    /// The C struct, pointing into `query_lens`.
    pub fn to_raw(&self) -> sys::attn_cascade_query_t {
        sys::attn_cascade_query_t {
            common_prefix_len: self.common_prefix_len,
            query_lens: self.query_lens.as_ptr(),
            num_reqs: self.query_lens.len() as i64,
            num_query_heads: self.num_query_heads,
            num_kv_heads: self.num_kv_heads,
            use_alibi: i32::from(self.use_alibi),
            use_sliding_window: i32::from(self.use_sliding_window),
            use_local_attention: i32::from(self.use_local_attention),
            num_sms: self.num_sms,
            dcp_world_size: self.dcp_world_size,
            ..sys::attn_cascade_query_t::INIT
        }
    }
}
