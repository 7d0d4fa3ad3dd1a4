//! [`CommonMetadata`]: the batch as the scheduler describes it (`attn_common_metadata_t`,
//! vLLM's `CommonAttentionMetadata`), made from slices it borrows or owns.
use crate::error::{Error, Result};
use crate::sys;
use crate::tensor_arg::{ptr_opt, raw_opt, TensorArg};

/// A batch. `CommonMetadata::new` fills the counts from the slices; every field may then be
/// changed (padding, mirrors, the optional tensors). The `attn_common_metadata_t` is made at
/// each call, pointing into it.
#[derive(Debug)]
pub struct CommonMetadata<'a> {
    /// (num_reqs + 1,) int32: start of each request's query tokens.
    pub query_start_loc: TensorArg<'a>,
    /// Host mirror of `query_start_loc` (required on CUDA builders).
    pub query_start_loc_cpu: Option<TensorArg<'a>>,
    /// (num_reqs,) int32: context length after this step.
    pub seq_lens: TensorArg<'a>,
    /// Host mirror of `seq_lens`.
    pub seq_lens_cpu: Option<TensorArg<'a>>,
    /// Requests (padding included).
    pub num_reqs: i64,
    /// Tokens (may be padded).
    pub num_actual_tokens: i64,
    /// Longest query.
    pub max_query_len: i64,
    /// Longest sequence (may be an upper bound).
    pub max_seq_len: i64,
    /// (num_reqs, max_blocks) int32 block ids (None only for utilities that do not read it).
    pub block_table: Option<TensorArg<'a>>,
    /// (>= num_actual_tokens,) int64 (or int32) slots.
    pub slot_mapping: Option<TensorArg<'a>>,
    /// Causal attention (default true).
    pub causal: bool,
    /// Optional (n,) int32/int64 logits indices (fast prefill).
    pub logits_indices_padded: Option<TensorArg<'a>>,
    /// Valid entries of `logits_indices_padded`.
    pub num_logits_indices: i64,
    /// Optional (num_reqs,) int32 encoder lengths (cross attention).
    pub encoder_seq_lens: Option<TensorArg<'a>>,
    /// Host mirror of `encoder_seq_lens`.
    pub encoder_seq_lens_cpu: Option<TensorArg<'a>>,
    /// Optional (num_reqs,) int32 DCP-local lengths.
    pub dcp_local_seq_lens: Option<TensorArg<'a>>,
    /// Host mirror of `dcp_local_seq_lens`.
    pub dcp_local_seq_lens_cpu: Option<TensorArg<'a>>,
    /// Host mirror of `logits_indices_padded` (ABI 1.1).
    pub logits_indices_padded_cpu: Option<TensorArg<'a>>,
    /// Optional (num_reqs,) int32 accepted tokens per request (vLLM's build() kwarg; ABI 1.2).
    pub num_accepted_tokens: Option<TensorArg<'a>>,
    /// Optional (num_reqs,) int32 host draft tokens per request, -1 for non-spec (ABI 1.2).
    pub num_decode_draft_tokens_cpu: Option<TensorArg<'a>>,
    /// Its mirror where the batch lives (CUDA GDN_ATTN builders; ABI 1.2).
    pub num_decode_draft_tokens: Option<TensorArg<'a>>,
    /// Optional (num_reqs,) host bool/int8/uint8/int32: still in the prompt (ABI 1.2).
    pub is_prefilling: Option<TensorArg<'a>>,
    /// Optional (num_reqs,) host int32: vLLM 0.33's upper bound on `seq_lens` (may exceed the
    /// device value on async spec-decode rows; builders read it when no exact lengths are
    /// given; ABI 1.4).
    pub seq_lens_cpu_upper_bound: Option<TensorArg<'a>>,
    /// Optional (num_reqs,) host int32: vLLM 0.33's upper bound on `dcp_local_seq_lens` (ABI 1.4).
    pub dcp_local_seq_lens_cpu_upper_bound: Option<TensorArg<'a>>,
    /// Optional (>= num_actual_tokens,) int64 token positions where the batch lives (ABI 1.4).
    pub positions: Option<TensorArg<'a>>,
    /// Optional (num_reqs,) int32 per-request causal flags where the batch lives: vLLM 0.33's
    /// tensor `causal` (ABI 1.4).
    pub causal_per_request: Option<TensorArg<'a>>,
    /// vLLM 0.33's `max_logits_per_req` (None: unset; ABI 1.4).
    pub max_logits_per_req: Option<i64>,
    /// Optional (num_reqs,) host int32/int64: each row's request-table index (ABI 1.4).
    pub req_idx: Option<TensorArg<'a>>,
    /// Optional (num_ranges, 3) host int32 rows (request, start, end): vLLM 0.33's
    /// `mm_req_doc_ranges`, requests in non-decreasing order (ABI 1.4); see
    /// [`CommonMetadata::doc_ranges`].
    pub mm_req_doc_ranges: Option<TensorArg<'a>>,
    /// Optional (num_reqs,) int32 R-SWA prefix lengths, host or where the batch lives (ABI 1.4).
    pub rswa_prefix_lens: Option<TensorArg<'a>>,
    /// Optional (num_reqs,) host int32 ReplaySSM decode ring origins (ABI 1.4).
    pub replayssm_decode_base_cpu: Option<TensorArg<'a>>,
    /// Optional (num_reqs,) int32 where the batch lives: the sparse SWA builders' build()
    /// keyword `replay_start` (DeepSeek V4.1's bounded replay; ABI 1.7).
    pub replay_start: Option<TensorArg<'a>>,
}

/// num_actual_tokens, max_query_len, max_seq_len of host slices.
fn counts(query_start_loc: &[i32], seq_lens: &[i32]) -> (i64, i64, i64) {
    let tokens = query_start_loc.last().copied().unwrap_or(0) as i64;
    let max_query = query_start_loc.windows(2).map(|w| w[1] as i64 - w[0] as i64).max().unwrap_or(0);
    let max_seq = seq_lens.iter().copied().max().unwrap_or(0) as i64;
    (tokens, max_query, max_seq)
}

impl<'a> CommonMetadata<'a> {
    /// A host batch borrowing its data: `block_table` holds `seq_lens.len()` rows of
    /// `block_table_width` block ids. num_reqs = seq_lens.len(), num_actual_tokens =
    /// query_start_loc's last entry, max_query_len and max_seq_len from the slices, causal.
    pub fn new(
        query_start_loc: &'a [i32],
        seq_lens: &'a [i32],
        block_table: &'a [i32],
        block_table_width: usize,
        slot_mapping: &'a [i64],
    ) -> Result<CommonMetadata<'a>> {
        check_table(block_table.len(), seq_lens.len(), block_table_width)?;
        let (tokens, max_query, max_seq) = counts(query_start_loc, seq_lens);
        let mut c = CommonMetadata::from_tensors(TensorArg::new(query_start_loc), TensorArg::new(seq_lens));
        c.num_reqs = seq_lens.len() as i64;
        c.num_actual_tokens = tokens;
        c.max_query_len = max_query;
        c.max_seq_len = max_seq;
        c.block_table = Some(TensorArg::matrix(block_table, block_table_width)?);
        c.slot_mapping = Some(TensorArg::new(slot_mapping));
        Ok(c)
    }

    /// A batch of two tensors and nothing else (counts 0, causal): set the other fields.
    pub fn from_tensors(query_start_loc: TensorArg<'a>, seq_lens: TensorArg<'a>) -> CommonMetadata<'a> {
        CommonMetadata {
            query_start_loc,
            query_start_loc_cpu: None,
            seq_lens,
            seq_lens_cpu: None,
            num_reqs: 0,
            num_actual_tokens: 0,
            max_query_len: 0,
            max_seq_len: 0,
            block_table: None,
            slot_mapping: None,
            causal: true,
            logits_indices_padded: None,
            num_logits_indices: 0,
            encoder_seq_lens: None,
            encoder_seq_lens_cpu: None,
            dcp_local_seq_lens: None,
            dcp_local_seq_lens_cpu: None,
            logits_indices_padded_cpu: None,
            num_accepted_tokens: None,
            num_decode_draft_tokens_cpu: None,
            num_decode_draft_tokens: None,
            is_prefilling: None,
            seq_lens_cpu_upper_bound: None,
            dcp_local_seq_lens_cpu_upper_bound: None,
            positions: None,
            causal_per_request: None,
            max_logits_per_req: None,
            req_idx: None,
            mm_req_doc_ranges: None,
            rswa_prefix_lens: None,
            replayssm_decode_base_cpu: None,
            replay_start: None,
        }
    }

    /// vLLM 0.33's `mm_req_doc_ranges` (request index -> (start, end) ranges) as the ABI's
    /// (num_ranges, 3) int32 rows, requests in increasing order, each request's ranges in the
    /// given order: pass the result to [`TensorArg::owned_matrix`] with width 3.
    pub fn doc_ranges<'r>(ranges: impl IntoIterator<Item = (i32, &'r [(i32, i32)])>) -> Vec<i32> {
        let mut requests: Vec<(i32, &'r [(i32, i32)])> = ranges.into_iter().collect();
        requests.sort_by_key(|(request, _)| *request); // stable: a request's ranges keep their order
        requests
            .into_iter()
            .flat_map(|(request, spans)| spans.iter().flat_map(move |&(start, end)| [request, start, end]))
            .collect()
    }

    /// A copy of a batch the library returned (`attn_metadata_to_common`).
    ///
    /// # Safety
    /// Every tensor of `c` is valid for `'a`.
    pub(crate) unsafe fn from_raw(c: &sys::attn_common_metadata_t) -> Result<CommonMetadata<'a>> {
        // SAFETY: per the contract.
        let arg = |t: *const sys::attn_tensor_t| -> Result<Option<TensorArg<'a>>> {
            match unsafe { t.as_ref() } {
                Some(t) => unsafe { TensorArg::from_descriptor(t) }.map(Some),
                None => Ok(None),
            }
        };
        let required = |t, what: &str| -> Result<TensorArg<'a>> {
            arg(t)?.ok_or_else(|| Error::invalid(format!("the library's batch has no {what}")))
        };
        let mut out = CommonMetadata::from_tensors(
            required(c.query_start_loc, "query_start_loc")?,
            required(c.seq_lens, "seq_lens")?,
        );
        out.query_start_loc_cpu = arg(c.query_start_loc_cpu)?;
        out.seq_lens_cpu = arg(c.seq_lens_cpu)?;
        out.num_reqs = c.num_reqs;
        out.num_actual_tokens = c.num_actual_tokens;
        out.max_query_len = c.max_query_len;
        out.max_seq_len = c.max_seq_len;
        out.block_table = arg(c.block_table_tensor)?;
        out.slot_mapping = arg(c.slot_mapping)?;
        out.causal = c.causal != 0;
        out.logits_indices_padded = arg(c.logits_indices_padded)?;
        out.num_logits_indices = c.num_logits_indices;
        out.encoder_seq_lens = arg(c.encoder_seq_lens)?;
        out.encoder_seq_lens_cpu = arg(c.encoder_seq_lens_cpu)?;
        out.dcp_local_seq_lens = arg(c.dcp_local_seq_lens)?;
        out.dcp_local_seq_lens_cpu = arg(c.dcp_local_seq_lens_cpu)?;
        out.logits_indices_padded_cpu = arg(c.logits_indices_padded_cpu)?;
        out.num_accepted_tokens = arg(c.num_accepted_tokens)?;
        out.num_decode_draft_tokens_cpu = arg(c.num_decode_draft_tokens_cpu)?;
        out.num_decode_draft_tokens = arg(c.num_decode_draft_tokens)?;
        out.is_prefilling = arg(c.is_prefilling)?;
        out.seq_lens_cpu_upper_bound = arg(c.seq_lens_cpu_upper_bound)?;
        out.dcp_local_seq_lens_cpu_upper_bound = arg(c.dcp_local_seq_lens_cpu_upper_bound)?;
        out.positions = arg(c.positions)?;
        out.causal_per_request = arg(c.causal_per_request)?;
        out.max_logits_per_req = (c.max_logits_per_req >= 0).then_some(c.max_logits_per_req);
        out.req_idx = arg(c.req_idx)?;
        out.mm_req_doc_ranges = arg(c.mm_req_doc_ranges)?;
        out.rswa_prefix_lens = arg(c.rswa_prefix_lens)?;
        out.replayssm_decode_base_cpu = arg(c.replayssm_decode_base_cpu)?;
        out.replay_start = arg(c.replay_start)?;
        Ok(out)
    }

    /// Calls `f` with the `attn_common_metadata_t` of this batch; the pointers are valid only
    /// during the call.
    pub fn with_raw<R>(&self, f: impl FnOnce(&sys::attn_common_metadata_t) -> R) -> R {
        let qsl = self.query_start_loc.to_raw();
        let seq = self.seq_lens.to_raw();
        let (qsl_cpu, seq_cpu) = (raw_opt(&self.query_start_loc_cpu), raw_opt(&self.seq_lens_cpu));
        let (bt, sm) = (raw_opt(&self.block_table), raw_opt(&self.slot_mapping));
        let logits = raw_opt(&self.logits_indices_padded);
        let (enc, enc_cpu) = (raw_opt(&self.encoder_seq_lens), raw_opt(&self.encoder_seq_lens_cpu));
        let (dcp, dcp_cpu) = (raw_opt(&self.dcp_local_seq_lens), raw_opt(&self.dcp_local_seq_lens_cpu));
        let logits_cpu = raw_opt(&self.logits_indices_padded_cpu);
        let accepted = raw_opt(&self.num_accepted_tokens);
        let (draft_cpu, draft) = (raw_opt(&self.num_decode_draft_tokens_cpu), raw_opt(&self.num_decode_draft_tokens));
        let prefilling = raw_opt(&self.is_prefilling);
        let (bound, dcp_bound) =
            (raw_opt(&self.seq_lens_cpu_upper_bound), raw_opt(&self.dcp_local_seq_lens_cpu_upper_bound));
        let (positions, causal) = (raw_opt(&self.positions), raw_opt(&self.causal_per_request));
        let (req_idx, ranges) = (raw_opt(&self.req_idx), raw_opt(&self.mm_req_doc_ranges));
        let (rswa, replay) = (raw_opt(&self.rswa_prefix_lens), raw_opt(&self.replayssm_decode_base_cpu));
        let replay_start = raw_opt(&self.replay_start);
        let raw = sys::attn_common_metadata_t {
            query_start_loc: &qsl,
            query_start_loc_cpu: ptr_opt(&qsl_cpu),
            seq_lens: &seq,
            seq_lens_cpu: ptr_opt(&seq_cpu),
            num_reqs: self.num_reqs,
            num_actual_tokens: self.num_actual_tokens,
            max_query_len: self.max_query_len,
            max_seq_len: self.max_seq_len,
            block_table_tensor: ptr_opt(&bt),
            slot_mapping: ptr_opt(&sm),
            causal: i32::from(self.causal),
            logits_indices_padded: ptr_opt(&logits),
            num_logits_indices: self.num_logits_indices,
            encoder_seq_lens: ptr_opt(&enc),
            encoder_seq_lens_cpu: ptr_opt(&enc_cpu),
            dcp_local_seq_lens: ptr_opt(&dcp),
            dcp_local_seq_lens_cpu: ptr_opt(&dcp_cpu),
            logits_indices_padded_cpu: ptr_opt(&logits_cpu),
            num_accepted_tokens: ptr_opt(&accepted),
            num_decode_draft_tokens_cpu: ptr_opt(&draft_cpu),
            num_decode_draft_tokens: ptr_opt(&draft),
            is_prefilling: ptr_opt(&prefilling),
            seq_lens_cpu_upper_bound: ptr_opt(&bound),
            dcp_local_seq_lens_cpu_upper_bound: ptr_opt(&dcp_bound),
            positions: ptr_opt(&positions),
            causal_per_request: ptr_opt(&causal),
            max_logits_per_req: self.max_logits_per_req.unwrap_or(-1),
            req_idx: ptr_opt(&req_idx),
            mm_req_doc_ranges: ptr_opt(&ranges),
            rswa_prefix_lens: ptr_opt(&rswa),
            replayssm_decode_base_cpu: ptr_opt(&replay),
            replay_start: ptr_opt(&replay_start),
            ..sys::attn_common_metadata_t::INIT
        };
        f(&raw)
    }
}

impl CommonMetadata<'static> {
    /// [`CommonMetadata::new`] owning its data.
    pub fn owned(
        query_start_loc: Vec<i32>,
        seq_lens: Vec<i32>,
        block_table: Vec<i32>,
        block_table_width: usize,
        slot_mapping: Vec<i64>,
    ) -> Result<CommonMetadata<'static>> {
        check_table(block_table.len(), seq_lens.len(), block_table_width)?;
        let (tokens, max_query, max_seq) = counts(&query_start_loc, &seq_lens);
        let num_reqs = seq_lens.len() as i64;
        let mut c = CommonMetadata::from_tensors(TensorArg::owned(query_start_loc), TensorArg::owned(seq_lens));
        c.num_reqs = num_reqs;
        c.num_actual_tokens = tokens;
        c.max_query_len = max_query;
        c.max_seq_len = max_seq;
        c.block_table = Some(TensorArg::owned_matrix(block_table, block_table_width)?);
        c.slot_mapping = Some(TensorArg::owned(slot_mapping));
        Ok(c)
    }
}

fn check_table(len: usize, rows: usize, width: usize) -> Result<()> {
    if len != rows * width {
        return Err(Error::invalid(format!(
            "block_table has {len} entries, expected seq_lens.len() * block_table_width = {rows} * {width}"
        )));
    }
    Ok(())
}
