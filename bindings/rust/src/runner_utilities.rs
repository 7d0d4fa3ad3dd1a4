//! ABI 1.7: vLLM 0.33's remaining utilities: `CommonAttentionMetadata.naive_query_lens()`,
//! `reshape_attn_output_for_spec_decode`, and the runner decisions of `v1/worker/cp_utils.py`
//! and `ubatch_utils.py` (docs/batch_utilities.md).
use crate::common_metadata::CommonMetadata;
use crate::error::Result;
use crate::library::Library;
use crate::tensor_arg::TensorArg;

/// The `fa_version` of [`Library::should_split_fa2_dcp_context_attention`] for vLLM's None.
pub const FA_VERSION_NONE: i32 = 0;

impl Library {
    /// `attn_common_metadata_naive_query_lens`: `query_start_loc[1:] - query_start_loc[:-1]`
    /// of a host batch into `out` (at least `num_reqs` entries; the rest untouched).
    pub fn common_metadata_naive_query_lens(&self, common: &CommonMetadata<'_>, out: &mut [i32]) -> Result<()> {
        let o = TensorArg::new_mut(out);
        let raw = o.to_raw();
        let err = common.with_raw(|c| {
            // SAFETY: a batch valid for the call; `raw` views `out` for the call; host memory,
            // so the stream is unused.
            unsafe { (self.api().attn_common_metadata_naive_query_lens)(c, &raw, std::ptr::null_mut()) }
        });
        self.check(err)
    }

    /// `attn_reshape_attn_output_for_spec_decode`: the shape and strides (in elements) of the
    /// (batch * seq_len, heads, dim) view of `attn_output` (4-D, or 3-D returned as it is);
    /// the view shares `attn_output`'s data and byte offset. Refused where torch's `view`
    /// refuses.
    pub fn reshape_attn_output_for_spec_decode(&self, attn_output: &TensorArg<'_>) -> Result<([i64; 3], [i64; 3])> {
        let raw = attn_output.to_raw();
        let mut out = raw;
        let (mut shape, mut strides) = ([0i64; 3], [0i64; 3]);
        // SAFETY: `raw` describes attn_output (not read: a view); three-entry out arrays.
        let err = unsafe {
            (self.api().attn_reshape_attn_output_for_spec_decode)(
                &raw,
                &mut out,
                shape.as_mut_ptr(),
                strides.as_mut_ptr(),
            )
        };
        self.check(err)?;
        Ok((shape, strides))
    }

    /// `attn_get_dcp_dummy_context_len`: vLLM 0.33's `get_dcp_dummy_context_len`.
    pub fn get_dcp_dummy_context_len(
        &self,
        dcp_world_size: i32,
        cp_kv_cache_interleave_size: i32,
        has_kv_cache_config: bool,
        create_mixed_batch: bool,
        is_graph_capturing: bool,
        uniform_decode: bool,
    ) -> Result<i64> {
        let mut out = 0i64;
        // SAFETY: scalars and a valid out-pointer.
        let err = unsafe {
            (self.api().attn_get_dcp_dummy_context_len)(
                dcp_world_size,
                cp_kv_cache_interleave_size,
                i32::from(has_kv_cache_config),
                i32::from(create_mixed_batch),
                i32::from(is_graph_capturing),
                i32::from(uniform_decode),
                &mut out,
            )
        };
        self.check(err)?;
        Ok(out)
    }

    /// `attn_should_split_fa2_dcp_context_attention`: vLLM 0.33's
    /// `should_split_fa2_dcp_context_attention` (`fa_version` [`FA_VERSION_NONE`] for None).
    pub fn should_split_fa2_dcp_context_attention(
        &self,
        fa_version: i32,
        max_query_len: i64,
        num_reqs: i64,
        num_decode_reqs: i64,
        num_context_prefill_reqs: i64,
    ) -> Result<bool> {
        let mut out = 0i32;
        // SAFETY: scalars and a valid out-pointer.
        let err = unsafe {
            (self.api().attn_should_split_fa2_dcp_context_attention)(
                fa_version,
                max_query_len,
                num_reqs,
                num_decode_reqs,
                num_context_prefill_reqs,
                &mut out,
            )
        };
        self.check(err)?;
        Ok(out != 0)
    }

    /// `attn_is_last_ubatch_empty`: vLLM 0.33's `is_last_ubatch_empty`.
    pub fn is_last_ubatch_empty(
        &self,
        orig_num_tokens: i64,
        padded_num_tokens: i64,
        num_ubatches: i32,
    ) -> Result<bool> {
        let mut out = 0i32;
        // SAFETY: scalars and a valid out-pointer.
        let err = unsafe {
            (self.api().attn_is_last_ubatch_empty)(orig_num_tokens, padded_num_tokens, num_ubatches, &mut out)
        };
        self.check(err)?;
        Ok(out != 0)
    }

    /// `attn_get_num_ubatches`: vLLM 0.33's `get_num_ubatches` on `parallel_config.enable_dbo`
    /// and `.ubatch_size`.
    pub fn get_num_ubatches(&self, enable_dbo: bool, ubatch_size: i32) -> Result<i32> {
        let mut out = 0i32;
        // SAFETY: scalars and a valid out-pointer.
        let err = unsafe { (self.api().attn_get_num_ubatches)(i32::from(enable_dbo), ubatch_size, &mut out) };
        self.check(err)?;
        Ok(out)
    }

    /// `attn_check_ubatch_thresholds`: vLLM 0.33's `check_ubatch_thresholds` on the
    /// ParallelConfig fields it reads.
    pub fn check_ubatch_thresholds(
        &self,
        enable_dbo: bool,
        ubatch_size: i32,
        dbo_decode_token_threshold: i64,
        dbo_prefill_token_threshold: i64,
        num_tokens: i64,
        uniform_decode: bool,
    ) -> Result<bool> {
        let mut out = 0i32;
        // SAFETY: scalars and a valid out-pointer.
        let err = unsafe {
            (self.api().attn_check_ubatch_thresholds)(
                i32::from(enable_dbo),
                ubatch_size,
                dbo_decode_token_threshold,
                dbo_prefill_token_threshold,
                num_tokens,
                i32::from(uniform_decode),
                &mut out,
            )
        };
        self.check(err)?;
        Ok(out != 0)
    }
}
