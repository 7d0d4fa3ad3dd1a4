//! [`BatchSplit`]: vLLM's split of a reordered batch into decodes, extends and prefills, and
//! `attn_common_metadata_unpadded`.
use crate::common_metadata::CommonMetadata;
use crate::error::Result;
use crate::library::Library;
use crate::owned_metadata::OwnedMetadata;
use crate::sys;

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
}
