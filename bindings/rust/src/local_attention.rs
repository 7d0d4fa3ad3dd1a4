//! [`LocalAttentionBatches`]: vLLM's make_local_attention_virtual_batches on a host batch,
//! into buffers this binding allocates.
use crate::common_metadata::CommonMetadata;
use crate::error::Result;
use crate::library::Library;
use crate::metadata::Metadata;
use crate::owned_metadata::OwnedMetadata;
use crate::sys;
use crate::tensor_arg::TensorArg;

/// The virtual batches of a batch: metadata of kind "common" (num_reqs = V) viewing its own
/// buffers and the input's slot mapping, and those buffers as slices.
#[derive(Debug)]
pub struct LocalAttentionBatches<'d> {
    metadata: OwnedMetadata<'d>, // declared first: released before the buffers it views
    buffers: Buffers,
}

#[derive(Debug)]
struct Buffers {
    query_start_loc: Vec<i32>,
    query_start_loc_cpu: Vec<i32>,
    seq_lens: Vec<i32>,
    seq_lens_cpu: Vec<i32>,
    num_computed_tokens: Vec<i32>,
    block_table: Vec<i32>,
    width: usize,
    virtual_req: Vec<i32>,
    virtual_block_start: Vec<i32>,
}

impl Library {
    /// `attn_local_attention_num_virtual_batches`: V for a batch and chunk.
    pub fn local_attention_num_virtual_batches(
        &self,
        attn_chunk_size: i32,
        common: &CommonMetadata<'_>,
    ) -> Result<i64> {
        let mut v = 0;
        let err = common.with_raw(|c| {
            // SAFETY: a batch valid for the call, a valid out-pointer.
            unsafe { (self.api().attn_local_attention_num_virtual_batches)(attn_chunk_size, c, &mut v) }
        });
        self.check(err)?;
        Ok(v)
    }

    /// `attn_make_local_attention_virtual_batches` on a host batch (host mirrors may be
    /// absent): every request split into its local attention chunks.
    pub fn make_local_attention_virtual_batches<'d>(
        &self,
        attn_chunk_size: i32,
        common: &'d CommonMetadata<'_>,
        block_size: i32,
    ) -> Result<LocalAttentionBatches<'d>> {
        let v = self.local_attention_num_virtual_batches(attn_chunk_size, common)?.max(0) as usize;
        let width = if block_size > 0 { (attn_chunk_size / block_size).max(1) as usize } else { 1 };
        let mut b = Buffers {
            query_start_loc: vec![0; v + 1],
            query_start_loc_cpu: vec![0; v + 1],
            seq_lens: vec![0; v],
            seq_lens_cpu: vec![0; v],
            num_computed_tokens: vec![0; v],
            block_table: vec![0; v * width],
            width,
            virtual_req: vec![0; v],
            virtual_block_start: vec![0; v],
        };
        let out = {
            let args = [
                TensorArg::new_mut(&mut b.query_start_loc),
                TensorArg::new_mut(&mut b.query_start_loc_cpu),
                TensorArg::new_mut(&mut b.seq_lens),
                TensorArg::new_mut(&mut b.seq_lens_cpu),
                TensorArg::new_mut(&mut b.num_computed_tokens),
                TensorArg::matrix_mut(&mut b.block_table, width)?,
                TensorArg::new_mut(&mut b.virtual_req),
                TensorArg::new_mut(&mut b.virtual_block_start),
            ];
            let t: Vec<sys::attn_tensor_t> = args.iter().map(TensorArg::to_raw).collect();
            let outputs = sys::attn_local_attention_out_t {
                query_start_loc: &t[0],
                query_start_loc_cpu: &t[1],
                seq_lens: &t[2],
                seq_lens_cpu: &t[3],
                num_computed_tokens_cpu: &t[4],
                block_table: &t[5],
                virtual_req: &t[6],
                virtual_block_start: &t[7],
                ..sys::attn_local_attention_out_t::INIT
            };
            let mut out = std::ptr::null_mut();
            let err = common.with_raw(|c| {
                // SAFETY: host outputs of the sizes the library asked for, valid for the call
                // (the descriptors point into `args`, alive until the end of this block).
                unsafe {
                    (self.api().attn_make_local_attention_virtual_batches)(
                        attn_chunk_size,
                        c,
                        block_size,
                        &outputs,
                        &mut out,
                        std::ptr::null_mut(),
                    )
                }
            });
            self.check(err)?;
            out
        };
        // SAFETY: caller-owned metadata viewing `b` (moved into the result, its heap buffers
        // stay put) and common's 'd data.
        let metadata = unsafe { OwnedMetadata::from_raw(self.clone(), out) };
        Ok(LocalAttentionBatches { metadata, buffers: b })
    }
}

impl LocalAttentionBatches<'_> {
    /// V, the number of virtual batches.
    pub fn num_virtual_batches(&self) -> usize {
        self.buffers.seq_lens.len()
    }

    /// The virtual batch as metadata of kind "common" (borrowed: it views this object).
    pub fn metadata(&self) -> &Metadata<'_, '_> {
        &self.metadata
    }

    /// The virtual batch as a build's input.
    pub fn to_common(&self) -> Result<CommonMetadata<'_>> {
        self.metadata.to_common()
    }

    /// (V + 1,) query start offsets of the virtual batches.
    pub fn query_start_loc(&self) -> &[i32] {
        &self.buffers.query_start_loc
    }

    /// (V,) KV lengths.
    pub fn seq_lens(&self) -> &[i32] {
        &self.buffers.seq_lens
    }

    /// (V,) tokens computed before each virtual batch's query.
    pub fn num_computed_tokens(&self) -> &[i32] {
        &self.buffers.num_computed_tokens
    }

    /// (V, block_table_width) block ids, row-major.
    pub fn block_table(&self) -> &[i32] {
        &self.buffers.block_table
    }

    /// Columns of [`LocalAttentionBatches::block_table`] (attn_chunk_size / block_size).
    pub fn block_table_width(&self) -> usize {
        self.buffers.width
    }

    /// (V,) source request of each virtual batch.
    pub fn virtual_req(&self) -> &[i32] {
        &self.buffers.virtual_req
    }

    /// (V,) first block of each virtual batch in its request's row.
    pub fn virtual_block_start(&self) -> &[i32] {
        &self.buffers.virtual_block_start
    }
}
