//! `attn_compute_slot_mapping` (block_table.py's compute_slot_mapping) on host slices.
use crate::error::{Error, Result};
use crate::library::Library;
use crate::sys;
use crate::tensor_arg::TensorArg;

/// The inputs of [`Library::compute_slot_mapping`], host slices.
#[derive(Clone, Copy, Debug)]
pub struct SlotMappingArgs<'a> {
    /// (num_reqs + 1,) query start offsets.
    pub query_start_loc: &'a [i32],
    /// Position of every scheduled token.
    pub positions: &'a [i64],
    /// (>= num_reqs) rows of `block_table_width` block ids.
    pub block_table: &'a [i32],
    /// Columns of `block_table`.
    pub block_table_width: usize,
    /// Tokens per block (> 0).
    pub block_size: i32,
    /// DCP world size (>= 1).
    pub dcp_world_size: i32,
    /// This DCP rank.
    pub dcp_rank: i32,
    /// DCP interleave (>= 1, divides block_size).
    pub cp_kv_cache_interleave_size: i32,
}

impl<'a> SlotMappingArgs<'a> {
    /// Arguments without DCP.
    pub fn new(
        query_start_loc: &'a [i32],
        positions: &'a [i64],
        block_table: &'a [i32],
        block_table_width: usize,
        block_size: i32,
    ) -> SlotMappingArgs<'a> {
        SlotMappingArgs {
            query_start_loc,
            positions,
            block_table,
            block_table_width,
            block_size,
            dcp_world_size: 1,
            dcp_rank: 0,
            cp_kv_cache_interleave_size: 1,
        }
    }
}

impl Library {
    /// `attn_compute_slot_mapping`: writes the slot of every scheduled token into `out`
    /// (>= positions.len() entries; entries past the tokens get `ATTN_PAD_SLOT_ID`).
    pub fn compute_slot_mapping(&self, args: &SlotMappingArgs<'_>, out: &mut [i64]) -> Result<()> {
        if args.query_start_loc.is_empty() {
            return Err(Error::invalid("query_start_loc is empty: it needs num_reqs + 1 entries"));
        }
        let qsl = TensorArg::new(args.query_start_loc);
        let positions = TensorArg::new(args.positions);
        let table = TensorArg::matrix(args.block_table, args.block_table_width)?;
        let slots = TensorArg::new_mut(out);
        let (qsl_raw, pos_raw, table_raw, slots_raw) =
            (qsl.to_raw(), positions.to_raw(), table.to_raw(), slots.to_raw());
        let raw = sys::attn_slot_mapping_args_t {
            query_start_loc: &qsl_raw,
            num_reqs: args.query_start_loc.len() as i64 - 1,
            positions: &pos_raw,
            block_table: &table_raw,
            block_size: args.block_size,
            dcp_world_size: args.dcp_world_size,
            dcp_rank: args.dcp_rank,
            cp_kv_cache_interleave_size: args.cp_kv_cache_interleave_size,
            slot_mapping: &slots_raw,
            ..sys::attn_slot_mapping_args_t::INIT
        };
        // SAFETY: host descriptors valid for the call; out is lent mutably.
        self.check(unsafe { (self.api().attn_compute_slot_mapping)(&raw, std::ptr::null_mut()) })
    }
}
