//! [`BatchSplit`]: vLLM's split of a reordered batch into decodes, extends and prefills,
//! `attn_common_metadata_unpadded` and KV-sharing fast prefill.
use crate::common_metadata::CommonMetadata;
use crate::error::Result;
use crate::library::Library;
use crate::owned_metadata::OwnedMetadata;
use crate::stream::Stream;
use crate::sys;
use crate::tensor_arg::TensorArg;

/// Request and token counts of a split (`attn_batch_split_t`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchSplit {
    pub num_decodes: i64,
    pub num_extends: i64,
    pub num_prefills: i64,
    pub num_decode_tokens: i64,
    pub num_extend_tokens: i64,
    pub num_prefill_tokens: i64,
}

impl BatchSplit {
    fn from_raw(s: &sys::attn_batch_split_t) -> BatchSplit {
        BatchSplit {
            num_decodes: s.num_decodes,
            num_extends: s.num_extends,
            num_prefills: s.num_prefills,
            num_decode_tokens: s.num_decode_tokens,
            num_extend_tokens: s.num_extend_tokens,
            num_prefill_tokens: s.num_prefill_tokens,
        }
    }
}

impl Library {
    /// `attn_split_decodes_and_prefills` (vLLM's `split_decodes_and_prefills`); the extend
    /// counts are 0.
    pub fn split_decodes_and_prefills(
        &self,
        common: &CommonMetadata<'_>,
        decode_threshold: i32,
        require_uniform: bool,
    ) -> Result<BatchSplit> {
        let mut out = sys::attn_batch_split_t::INIT;
        let err = common.with_raw(|c| {
            // SAFETY: a batch valid for the call, an initialized out-struct.
            unsafe {
                (self.api().attn_split_decodes_and_prefills)(c, decode_threshold, i32::from(require_uniform), &mut out)
            }
        });
        self.check(err)?;
        Ok(BatchSplit::from_raw(&out))
    }

    /// `attn_split_decodes_prefills_and_extends` (vLLM's function of that name).
    pub fn split_decodes_prefills_and_extends(
        &self,
        common: &CommonMetadata<'_>,
        decode_threshold: i32,
    ) -> Result<BatchSplit> {
        let mut out = sys::attn_batch_split_t::INIT;
        let err = common.with_raw(|c| {
            // SAFETY: as above.
            unsafe { (self.api().attn_split_decodes_prefills_and_extends)(c, decode_threshold, &mut out) }
        });
        self.check(err)?;
        Ok(BatchSplit::from_raw(&out))
    }

    /// `attn_common_metadata_unpadded` (vLLM's `CommonAttentionMetadata.unpadded`): the batch
    /// cut to its real requests and tokens, as metadata of kind "common" viewing `common`'s
    /// data; [`crate::Metadata::to_common`] makes it a build's input.
    pub fn common_metadata_unpadded<'d>(
        &self,
        common: &'d CommonMetadata<'_>,
        num_actual_tokens: i64,
        num_actual_reqs: i64,
    ) -> Result<OwnedMetadata<'d>> {
        let mut out = std::ptr::null_mut();
        let err = common.with_raw(|c| {
            // SAFETY: as above; the result views common's data, hence 'd.
            unsafe { (self.api().attn_common_metadata_unpadded)(c, num_actual_tokens, num_actual_reqs, &mut out) }
        });
        self.check(err)?;
        // SAFETY: caller-owned metadata viewing 'd data.
        Ok(unsafe { OwnedMetadata::from_raw(self.clone(), out) })
    }

    /// `attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex` (ABI 1.7): vLLM's
    /// make_kv_sharing_fast_prefill_common_attn_metadata as vLLM returns it. `None` where vLLM
    /// returns its argument (max_query_len == 1, or no `logits_indices_padded`): the batch is
    /// `common` as it is, and the library allocated nothing. Otherwise the new batch (the
    /// tokens whose logits are needed) as metadata of kind "common" viewing `common`'s data and
    /// the outputs; [`crate::Metadata::to_common`] makes it a build's input. The outputs,
    /// (>= num_reqs + 1,) int32 where the batch lives and in host memory, are required either
    /// way and written only for a new batch; `logits_indices_cpu` is the host copy of the
    /// indices when they are device memory.
    pub fn make_kv_sharing_fast_prefill_common_attn_metadata_ex<'d>(
        &self,
        common: &'d CommonMetadata<'_>,
        logits_indices_cpu: Option<&TensorArg<'_>>,
        out_query_start_loc: &TensorArg<'d>,
        out_query_start_loc_cpu: &TensorArg<'d>,
        stream: Stream,
    ) -> Result<Option<OwnedMetadata<'d>>> {
        let li = logits_indices_cpu.map(TensorArg::to_raw);
        let (q, qc) = (out_query_start_loc.to_raw(), out_query_start_loc_cpu.to_raw());
        let mut batch = sys::attn_common_metadata_t::INIT;
        let mut out = std::ptr::null_mut();
        let err = common.with_raw(|c| {
            let li = li.as_ref().map_or(std::ptr::null(), |t| t as *const sys::attn_tensor_t);
            // SAFETY: a batch and descriptors valid for the call, valid out-pointers; the
            // outputs are borrowed for 'd, as the result that views them.
            unsafe {
                (self.api().attn_make_kv_sharing_fast_prefill_common_attn_metadata_ex)(
                    c,
                    li,
                    &q,
                    &qc,
                    &mut batch,
                    &mut out,
                    stream.as_raw(),
                )
            }
        });
        self.check(err)?;
        if out.is_null() {
            return Ok(None); // passed through: vLLM's `return common_attn_metadata`
        }
        // SAFETY: caller-owned metadata viewing 'd data (common's and the outputs').
        Ok(Some(unsafe { OwnedMetadata::from_raw(self.clone(), out) }))
    }
}
