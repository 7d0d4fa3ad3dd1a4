//! Batch utilities against values computed here: unpadded, the splits, local-attention
//! virtual batches (vLLM's algorithm written out naively), slot mapping.
use libattn::{BatchSplit, Builder, ErrorCode, SlotMappingArgs, Stream, TensorArg};

use crate::support::{config, library, spec, Sample, BLOCK_SIZE, CONTEXT, QUERY, WIDTH};

#[test]
fn unpadded_cuts_the_batch_and_builds() {
    let lib = library();
    let sample = Sample::new();
    let common = sample.common();
    let cut = lib.common_metadata_unpadded(&common, 3, 3).expect("unpadded");
    assert_eq!(cut.kind(), "common");
    let qsl = cut.tensor("query_start_loc").unwrap().unwrap();
    assert_eq!(qsl.as_slice::<i32>().unwrap(), &[0, 1, 2, 3]);
    let batch = cut.to_common().expect("to_common");
    assert_eq!((batch.num_reqs, batch.num_actual_tokens), (3, 3));
    assert_eq!(batch.block_table.as_ref().unwrap().shape(), &[3, WIDTH as i64]);
    let mut b = Builder::new(&lib, "FLASH_ATTN", &spec(), &config(90)).unwrap();
    let md = b.build(0, &batch, false).expect("build on the unpadded batch");
    assert_eq!(md.int("num_actual_tokens").unwrap(), 3);
    assert_eq!(md.tensor("seq_lens").unwrap().unwrap().as_slice::<i32>().unwrap(), &sample.seq_lens[..3]);
    let e = lib.common_metadata_unpadded(&common, 56, 5).expect_err("56 > 55 tokens");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("num_actual_tokens=56"), "{e}");
    let e = b.build(0, &common, false).map(|_| ()).and_then(|_| cut.to_common().map(|_| ()));
    assert!(e.is_ok());
    let md = b.build(0, &common, false).unwrap();
    let e = md.to_common().expect_err("FLASH_ATTN metadata is not 'common'");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
}

/// ABI 1.7: `None` (the batch as it is) where vLLM returns its argument, else the batch of the
/// tokens whose logits are needed.
#[test]
fn fast_prefill_ex_passes_through_or_makes_a_batch() {
    let lib = library();
    let sample = Sample::new();
    let mut common = sample.common();
    let (mut q, mut qc) = (vec![-9i32; 6], vec![-9i32; 6]);
    {
        let (tq, tqc) = (TensorArg::new_mut(&mut q), TensorArg::new_mut(&mut qc));
        let r = lib.make_kv_sharing_fast_prefill_common_attn_metadata_ex(&common, None, &tq, &tqc, Stream::DEFAULT);
        assert!(r.expect("not armed: passes through").is_none());
    }
    assert_eq!(qc, vec![-9; 6], "outputs untouched");
    // the last token of each request (QUERY = 1, 1, 1, 32, 20: tokens 0, 1, 2, 34, 54)
    let logits = [0i32, 1, 2, 34, 54];
    common.logits_indices_padded = Some(TensorArg::new(&logits));
    common.num_logits_indices = 5;
    {
        let (tq, tqc) = (TensorArg::new_mut(&mut q), TensorArg::new_mut(&mut qc));
        let md = lib
            .make_kv_sharing_fast_prefill_common_attn_metadata_ex(&common, None, &tq, &tqc, Stream::DEFAULT)
            .expect("armed")
            .expect("a new batch");
        let batch = md.to_common().unwrap();
        assert_eq!((batch.num_reqs, batch.num_actual_tokens, batch.max_query_len), (5, 5, 1));
        let mut b = Builder::new(&lib, "FLASH_ATTN", &spec(), &config(90)).unwrap();
        let built = b.build(0, &batch, false).expect("build on the new batch");
        assert_eq!(built.tensor("query_start_loc").unwrap().unwrap().as_slice::<i32>().unwrap(), &[0, 1, 2, 3, 4, 5]);
        assert_eq!(built.tensor("seq_lens").unwrap().unwrap().as_slice::<i32>().unwrap(), &sample.seq_lens[..]);
    }
    assert_eq!(qc, vec![0, 1, 2, 3, 4, 5]);
    common.logits_indices_padded = None;
    common.num_logits_indices = 0;
    common.max_query_len = -1;
    let (tq, tqc) = (TensorArg::new_mut(&mut q), TensorArg::new_mut(&mut qc));
    let e = lib
        .make_kv_sharing_fast_prefill_common_attn_metadata_ex(&common, None, &tq, &tqc, Stream::DEFAULT)
        .map(|_| ())
        .expect_err("a negative max_query_len");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(e.message, "common->max_query_len=-1 is negative");
}

#[test]
fn splits_count_decodes_extends_and_prefills() {
    let lib = library();
    let sample = Sample::new();
    let common = sample.common();
    let split = lib.split_decodes_and_prefills(&common, 1, false).unwrap();
    assert_eq!(
        split,
        BatchSplit {
            num_decodes: 3,
            num_prefills: 2,
            num_decode_tokens: 3,
            num_prefill_tokens: 52,
            ..BatchSplit::default()
        }
    );
    let split = lib.split_decodes_prefills_and_extends(&common, 1).unwrap();
    assert_eq!(
        split,
        BatchSplit {
            num_decodes: 3,
            num_extends: 1,
            num_prefills: 1,
            num_decode_tokens: 3,
            num_extend_tokens: 32,
            num_prefill_tokens: 20
        }
    );
    let e = lib.split_decodes_and_prefills(&common, -1, false).expect_err("threshold -1");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("decode_threshold=-1"), "{e}");
}

/// vLLM's make_local_attention_virtual_batches, element by element.
fn virtual_batches(
    chunk: i32,
    q: &[i32],
    seq: &[i32],
    table: &[i32],
    width: usize,
) -> (Vec<i32>, Vec<i32>, Vec<Vec<i32>>) {
    let (mut q_local, mut k_local, mut rows) = (vec![], vec![], vec![]);
    let pages = (chunk / BLOCK_SIZE) as usize;
    for r in 0..q.len() {
        let context = seq[r] - q[r];
        let first = (chunk - context % chunk).min(q[r]);
        let last = if seq[r] % chunk == 0 { chunk } else { seq[r] % chunk };
        let blocks = 1 + (q[r] - first + chunk - 1) / chunk;
        for i in 0..blocks {
            let ql = if i == 0 { first } else { (q[r] - first - chunk * (i - 1)).min(chunk) };
            q_local.push(ql);
            k_local.push(if i == blocks - 1 { last } else { chunk });
            let reverse = blocks - 1 - i;
            let k_start = seq[r] - (reverse * chunk + last);
            let start = (k_start / BLOCK_SIZE) as usize;
            rows.push((0..pages).map(|j| table[r * width + (start + j).min(width - 1)]).collect());
        }
    }
    (q_local, k_local, rows)
}

#[test]
fn local_attention_virtual_batches() {
    let lib = library();
    let sample = Sample::new();
    let common = sample.common();
    for chunk in [16, 32, 64] {
        let (q, k, rows) = virtual_batches(chunk, &QUERY, &sample.seq_lens, &sample.block_table, WIDTH);
        let v = lib.make_local_attention_virtual_batches(chunk, &common, BLOCK_SIZE).expect("virtual batches");
        assert_eq!(v.num_virtual_batches(), q.len(), "chunk {chunk}");
        let qsl: Vec<i32> = std::iter::once(0)
            .chain(q.iter().scan(0, |a, x| {
                *a += x;
                Some(*a)
            }))
            .collect();
        assert_eq!(v.query_start_loc(), &qsl[..], "chunk {chunk}");
        assert_eq!(v.seq_lens(), &k[..], "chunk {chunk}");
        assert_eq!(v.block_table_width(), (chunk / BLOCK_SIZE) as usize);
        let got: Vec<Vec<i32>> = v.block_table().chunks(v.block_table_width()).map(<[i32]>::to_vec).collect();
        assert_eq!(got, rows, "chunk {chunk}");
        let md = v.metadata();
        assert_eq!(md.kind(), "common");
        assert_eq!(md.tensor("seq_lens").unwrap().unwrap().as_slice::<i32>().unwrap(), &k[..]);
        let batch = v.to_common().unwrap();
        assert_eq!(batch.num_reqs, q.len() as i64);
        let mut b = Builder::new(&lib, "FLASH_ATTN", &spec(), &config(90)).unwrap();
        let built = b.build(0, &batch, false).expect("a build on the virtual batches");
        assert_eq!(built.tensor("seq_lens").unwrap().unwrap().as_slice::<i32>().unwrap(), &k[..]);
    }
    // by hand, chunk 16: the chunked prefill (64 + 32) and the fresh prefill (20) split in two
    let v = lib.make_local_attention_virtual_batches(16, &common, BLOCK_SIZE).unwrap();
    assert_eq!(v.seq_lens(), &[9, 4, 1, 16, 16, 16, 4]);
    assert_eq!(v.query_start_loc(), &[0, 1, 2, 3, 19, 35, 51, 55]);
    assert_eq!(v.virtual_req(), &[0, 1, 2, 3, 3, 4, 4]);
    let e = lib.make_local_attention_virtual_batches(24, &common, BLOCK_SIZE).expect_err("24 % 16");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(e.message, "attn_chunk_size 24 is not divisible by block_size 16");
}

#[test]
fn slot_mapping_matches_the_block_table() {
    let lib = library();
    let sample = Sample::new();
    let positions: Vec<i64> = (0..5).flat_map(|r| (CONTEXT[r] as i64)..(CONTEXT[r] + QUERY[r]) as i64).collect();
    let mut out = vec![7i64; positions.len() + 3];
    let args = SlotMappingArgs::new(&sample.query_start_loc, &positions, &sample.block_table, WIDTH, BLOCK_SIZE);
    lib.compute_slot_mapping(&args, &mut out).expect("slot mapping");
    assert_eq!(&out[..positions.len()], &sample.slot_mapping[..]);
    assert_eq!(&out[positions.len()..], &[-1, -1, -1], "padding gets PAD_SLOT_ID");
    let bad = SlotMappingArgs { block_size: 0, ..args };
    let e = lib.compute_slot_mapping(&bad, &mut out).expect_err("block_size 0");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("block_size=0"), "{e}");
    let e = lib.compute_slot_mapping(&args, &mut out[..10]).expect_err("10 slots for 55 tokens");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("slot_mapping"), "{e}");
}

#[test]
fn the_raw_table_reaches_the_unwrapped_functions() {
    let lib = library();
    let api = lib.api();
    // split_prefill_chunks: greedy ranges whose seq_lens sum to at most 8
    let seq = [5, 3, 4, 6];
    let mut bounds = [0i64; 8];
    let mut chunks = 0;
    // SAFETY: host arrays of the sizes given.
    let err = unsafe { (api.attn_split_prefill_chunks)(seq.as_ptr(), 4, 8, 10, bounds.as_mut_ptr(), 4, &mut chunks) };
    assert!(err.is_null());
    assert_eq!(chunks, 3);
    assert_eq!(&bounds[..6], &[10, 12, 12, 13, 13, 14]);
    // an error through the table, released through the table
    // SAFETY: as above.
    let err = unsafe { (api.attn_split_prefill_chunks)(seq.as_ptr(), 4, 5, 0, bounds.as_mut_ptr(), 4, &mut chunks) };
    assert!(!err.is_null());
    // SAFETY: a live error object, destroyed once.
    unsafe {
        assert_eq!((api.attn_error_code)(err), ErrorCode::InvalidArgument.as_raw());
        let message = std::ffi::CStr::from_ptr((api.attn_error_message)(err)).to_str().unwrap().to_owned();
        assert!(message.contains("seq_lens[3]=6"), "{message}");
        (api.attn_error_destroy)(err);
    }
    // slice_query_start_locs with descriptors from TensorArg
    let sample = Sample::new();
    let qsl = libattn::TensorArg::new(&sample.query_start_loc);
    let mut out = [0i32; 3];
    let out_arg = libattn::TensorArg::new_mut(&mut out);
    let (qsl_raw, out_raw) = (qsl.to_raw(), out_arg.to_raw());
    // SAFETY: host descriptors valid for the call.
    let err = unsafe { (api.attn_slice_query_start_locs)(&qsl_raw, 3, 5, &out_raw, std::ptr::null_mut()) };
    assert!(err.is_null());
    drop(out_arg);
    assert_eq!(out, [0, 32, 52]);
}
