//! Builds of the C demo's batch, checked against values computed here: FLASH_ATTN's fields,
//! cascade, clones, update_block_table, capture, drafting, the cascade heuristic, and a few
//! fields of the other backends.
use libattn::{
    Builder, CascadeQuery, CommonMetadata, CudagraphSupport, DType, ErrorCode, FieldValue, Metadata, TensorArg,
};

use crate::support::{config, library, spec, Sample, BLOCK_SIZE, CONTEXT, QUERY, WIDTH};

fn flash_attn(capability: i32) -> Builder {
    Builder::new(&library(), "FLASH_ATTN", &spec(), &config(capability)).expect("FLASH_ATTN builder")
}

fn i32s(md: &Metadata<'_, '_>, name: &str) -> Vec<i32> {
    let t = md.tensor(name).unwrap_or_else(|e| panic!("{name}: {e}")).unwrap_or_else(|| panic!("{name} is None"));
    t.as_slice::<i32>().unwrap_or_else(|e| panic!("{name}: {e}")).to_vec()
}

fn boolean(md: &Metadata<'_, '_>, name: &str) -> bool {
    match md.get(name).unwrap_or_else(|e| panic!("{name}: {e}")) {
        FieldValue::Bool(b) => b,
        other => panic!("{name} is {other:?}, not a Bool"),
    }
}

fn is_none(md: &Metadata<'_, '_>, name: &str) -> bool {
    md.get(name).unwrap_or_else(|e| panic!("{name}: {e}")).is_none()
}

/// query_start_loc, seq_lens and slot_mapping of the sample, computed without `Sample`.
fn expected_batch() -> (Vec<i32>, Vec<i32>, Vec<i64>) {
    let qsl = vec![0, 1, 2, 3, 35, 55];
    let seq = vec![41, 100, 17, 96, 20];
    // blocks: req0 1..=3, req1 4..=10, req2 11..=12, req3 13..=18, req4 19..=20
    let first_block = [1i64, 4, 11, 13, 19];
    let mut slots = Vec::new();
    for r in 0..5 {
        for p in CONTEXT[r]..CONTEXT[r] + QUERY[r] {
            slots.push((first_block[r] + (p / BLOCK_SIZE) as i64) * 16 + (p % BLOCK_SIZE) as i64);
        }
    }
    (qsl, seq, slots)
}

#[test]
fn flash_attn_build_has_the_values_computed_by_hand() {
    let sample = Sample::new();
    let (qsl, seq, slots) = expected_batch();
    assert_eq!(sample.slot_mapping.len(), 55);
    assert_eq!(&slots[..4], &[56, 163, 192, 272]); // the C demo's first slots
    let mut b = flash_attn(90);
    let common = sample.common();
    assert_eq!((common.num_reqs, common.num_actual_tokens, common.max_query_len, common.max_seq_len), (5, 55, 32, 100));
    let md = b.build(0, &common, false).expect("build");
    assert_eq!(md.kind(), "FLASH_ATTN");
    assert_eq!(md.len(), 36); // vLLM 0.33's fields and libattn's scheduler inputs; no cascade
    assert_eq!(md.int("num_actual_tokens").unwrap(), 55);
    assert_eq!(md.int("max_query_len").unwrap(), 32);
    assert_eq!(md.int("max_seq_len").unwrap(), 100);
    assert_eq!(i32s(&md, "query_start_loc"), qsl);
    assert_eq!(i32s(&md, "seq_lens"), seq);
    let table = md.tensor("block_table").unwrap().unwrap();
    assert_eq!(table.shape(), &[5, WIDTH as i64]);
    assert_eq!(table.strides(), Some(&[WIDTH as i64, 1][..]));
    assert_eq!(table.dtype(), DType::INT32);
    assert!(table.device().is_host());
    let rows = table.as_slice::<i32>().unwrap();
    assert_eq!(&rows[..4], &[1, 2, 3, 0]);
    assert_eq!(&rows[WIDTH..WIDTH + 8], &[4, 5, 6, 7, 8, 9, 10, 0]);
    let sm = md.tensor("slot_mapping").unwrap().unwrap();
    assert_eq!(sm.dtype(), DType::INT64);
    assert_eq!(sm.as_slice::<i64>().unwrap(), &slots[..]);
    let e = sm.as_slice::<i32>().expect_err("slot_mapping is int64");
    assert!(e.message.contains("int64"), "{e}");
    // the views are the caller's memory, not copies
    assert_eq!(md.tensor("seq_lens").unwrap().unwrap().data_ptr(), sample.seq_lens.as_ptr().cast());
    assert!(boolean(&md, "causal"));
    assert!(boolean(&md, "aot_schedule"));
    // vLLM 0.33 removed cascade attention: no cascade fields without a common prefix
    for gone in ["use_cascade", "common_prefix_len", "cu_prefix_query_lens", "suffix_kv_lens"] {
        assert_eq!(md.get(gone).expect_err(gone).code, ErrorCode::NotFound, "{gone}");
    }
    assert_eq!(md.int("num_decode_reqs").unwrap(), 0);
    for none in ["dcp_context_kv_lens", "scheduler_metadata"] {
        assert!(is_none(&md, none), "{none}");
        assert!(md.tensor(none).unwrap().is_none());
    }
    let buffer = md.tensor("scheduler_metadata_buffer").unwrap().unwrap();
    assert_eq!(buffer.shape(), &[1 + 256 * 4]);
    assert!(buffer.as_slice::<i32>().unwrap().iter().all(|&v| v == 0));
    assert_eq!(md.int("scheduler_num_heads_q").unwrap(), 32);
    assert_eq!(md.int("scheduler_num_heads_kv").unwrap(), 8);
    assert_eq!(md.int("scheduler_max_seqlen_k").unwrap(), 100);
    // fields by index agree with fields by name
    let fields = md.fields().unwrap();
    assert_eq!(fields.len(), 36);
    assert_eq!(fields[0].name, "num_actual_tokens");
    assert!(matches!(fields[0].value, FieldValue::Int(55)));
    assert!(fields.iter().any(|f| f.name == "seq_lens" && f.value.as_tensor().is_some()));
    let e = md.field(36).expect_err("index 36");
    assert_eq!(e.code, ErrorCode::NotFound);
    let e = md.get("no_such_field").expect_err("unknown field");
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("no_such_field") && e.message.contains("FLASH_ATTN"), "{e}");
    let e = md.int("seq_lens").expect_err("a tensor is not an int");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let e = md.tensor("max_seq_len").expect_err("an int is not a tensor");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
}

#[test]
fn cascade_and_a_clone_that_outlives_the_rebuild_and_the_builder() {
    let sample = Sample::new();
    let common = sample.common();
    let mut b = flash_attn(90);
    let suffix: Vec<i32> = sample.seq_lens.iter().map(|s| s - 16).collect();
    assert_eq!(suffix, [25, 84, 1, 80, 4]);
    let kept = {
        let md = b.build(16, &common, false).expect("cascade build");
        assert!(boolean(&md, "use_cascade"));
        assert_eq!(i32s(&md, "cu_prefix_query_lens"), [0, 55]);
        assert_eq!(i32s(&md, "prefix_kv_lens"), [16]);
        assert_eq!(i32s(&md, "suffix_kv_lens"), suffix);
        assert_eq!(md.int("scheduler_max_seqlen_k").unwrap(), 84);
        md.clone_owned().expect("clone")
    };
    let md = b.build(0, &common, false).expect("rebuild without prefix");
    assert_eq!(md.get("suffix_kv_lens").expect_err("no cascade fields").code, ErrorCode::NotFound);
    assert_eq!(kept.kind(), "FLASH_ATTN");
    assert_eq!(i32s(&kept, "suffix_kv_lens"), suffix, "the clone keeps its values");
    assert!(boolean(&kept, "use_cascade"));
    drop(b);
    assert_eq!(i32s(&kept, "suffix_kv_lens"), suffix, "and outlives the builder");
    assert_eq!(i32s(&kept, "seq_lens"), sample.seq_lens);
    let again = kept.clone_owned().expect("a clone of a clone");
    drop(kept);
    assert_eq!(i32s(&again, "prefix_kv_lens"), [16]);
}

#[test]
fn update_block_table_swaps_the_table_and_slots_of_another_group() {
    let sample = Sample::new();
    let common = sample.common();
    let mut group2_table = sample.block_table.clone();
    for id in group2_table.iter_mut().filter(|id| **id != 0) {
        *id += 1000;
    }
    let group2_slots: Vec<i64> = sample.slot_mapping.iter().map(|s| s + 16000).collect();
    let table = TensorArg::matrix(&group2_table, WIDTH).unwrap();
    let slots = TensorArg::new(&group2_slots);
    let mut a = flash_attn(90);
    let mut other = flash_attn(90);
    assert!(a.supports_update_block_table().unwrap());
    let md = a.build(16, &common, false).expect("build");
    let md2 = other.update_block_table(&md, &table, &slots).expect("update_block_table");
    assert_eq!(md2.tensor("block_table").unwrap().unwrap().as_slice::<i32>().unwrap(), &group2_table[..]);
    assert_eq!(md2.tensor("slot_mapping").unwrap().unwrap().as_slice::<i64>().unwrap(), &group2_slots[..]);
    assert_eq!(i32s(&md2, "suffix_kv_lens"), [25, 84, 1, 80, 4]);
    assert_eq!(md2.int("common_prefix_len").unwrap(), 16);
    assert_eq!(md.tensor("block_table").unwrap().unwrap().as_slice::<i32>().unwrap(), &sample.block_table[..]);
    // bad input: an int32 slot mapping
    let slots32: Vec<i32> = group2_slots.iter().map(|&s| s as i32).collect();
    let bad = TensorArg::new(&slots32);
    let e = other.update_block_table(&md, &table, &bad).expect_err("int32 slots");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(e.message, "slot_mapping has dtype int32, expected int64");
    // a backend without it
    let mut triton = Builder::new(&library(), "TRITON_ATTN", &spec(), &config(90)).unwrap();
    assert!(!triton.supports_update_block_table().unwrap());
    let e = triton.update_block_table(&md, &table, &slots).expect_err("TRITON_ATTN");
    assert_eq!(e.code, ErrorCode::Unsupported);
    assert_eq!(e.message, "TRITON_ATTN does not support update_block_table");
}

#[test]
fn capture_drafting_and_levels() {
    let lib = library();
    let sample = Sample::new();
    let mut always = flash_attn(90);
    let mut uniform = flash_attn(80);
    assert_eq!(always.cudagraph_support().unwrap(), CudagraphSupport::Always);
    assert_eq!(uniform.cudagraph_support().unwrap(), CudagraphSupport::UniformBatch);
    assert_eq!(lib.min_cudagraph_support(&[&always, &uniform]).unwrap(), CudagraphSupport::UniformBatch);
    assert_eq!(lib.min_cudagraph_support(&[]).unwrap(), CudagraphSupport::Always);
    // capture needs a writable seq_lens
    let mut seq = sample.seq_lens.clone();
    let mut read_only = sample.common();
    let e = always.build_for_cudagraph_capture(&mut read_only).expect_err("read-only seq_lens");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("common.seq_lens is borrowed read-only"), "{e}");
    let mut mixed = sample.common();
    mixed.seq_lens = TensorArg::new_mut(&mut seq);
    let md = always.build_for_cudagraph_capture(&mut mixed).expect("ALWAYS captures a mixed batch");
    assert_eq!(md.int("num_actual_tokens").unwrap(), 55);
    let e = uniform.build_for_cudagraph_capture(&mut mixed).expect_err("UNIFORM_BATCH, mixed batch");
    assert_eq!(e.code, ErrorCode::Unsupported);
    assert_eq!(
        e.message,
        "FLASH_ATTN has CUDA graph support UNIFORM_BATCH: request 0 has query length 1 but the batch is uniform in 32"
    );
    // four spec-decode requests of 4, 4, 4, 3 tokens: uniform
    let spec_decode = Sample::with(&[46, 56, 66, 77], &[4, 4, 4, 3], WIDTH);
    let mut c = CommonMetadata::owned(
        spec_decode.query_start_loc.clone(),
        spec_decode.seq_lens.clone(),
        spec_decode.block_table.clone(),
        WIDTH,
        spec_decode.slot_mapping.clone(),
    )
    .unwrap();
    let md = uniform.build_for_cudagraph_capture(&mut c).expect("uniform capture");
    assert_eq!(md.int("max_query_len").unwrap(), 4);
    assert_eq!(i32s(&md, "query_start_loc"), [0, 4, 8, 12, 15]);
    // drafting: fast_build turns FA3's ahead-of-time scheduling off
    let common = sample.common();
    let md = always.build_for_drafting(&common, 2).expect("drafting");
    assert!(!boolean(&md, "aot_schedule"));
    let e = always.build_for_drafting(&common, -1).expect_err("draft_index -1");
    assert!(e.message.contains("draft_index=-1"), "{e}");
    let md = always.build(0, &common, true).expect("fast build");
    assert!(!boolean(&md, "aot_schedule"));
}

#[test]
fn use_cascade_attention_follows_vllms_heuristic() {
    let b = flash_attn(90);
    let decodes = vec![1; 256];
    let decodes = &decodes[..];
    let mixed = [1, 1, 1, 1, 1, 1, 1, 2];
    fn q(prefix: i64, lens: &[i32], kv_heads: i32) -> CascadeQuery<'_> {
        CascadeQuery::new(prefix, lens, 32, kv_heads, 132)
    }
    assert!(!b.use_cascade_attention(&q(255, &decodes[..8], 8)).unwrap(), "prefix < 256");
    assert!(!b.use_cascade_attention(&q(1024, &decodes[..7], 8)).unwrap(), "< 8 requests");
    assert!(b.use_cascade_attention(&q(1024, &decodes[..8], 32)).unwrap(), "MHA: no FlashDecoding");
    assert!(b.use_cascade_attention(&q(1024, &mixed, 8)).unwrap(), "a prefill in the batch");
    assert!(!b.use_cascade_attention(&q(1024, &decodes[..8], 8)).unwrap(), "8 decodes: FlashDecoding wins");
    assert!(b.use_cascade_attention(&q(1024, decodes, 8)).unwrap(), "256 decodes: cascade wins");
    let mut alibi = q(1024, decodes, 8);
    alibi.use_alibi = true;
    assert!(!b.use_cascade_attention(&alibi).unwrap());
    let e = b.use_cascade_attention(&CascadeQuery::new(1024, decodes, 32, 0, 132)).expect_err("no KV heads");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(e.message, "query->num_kv_heads=0 must be positive");
}

#[test]
fn the_other_backends_have_the_values_computed_by_hand() {
    let lib = library();
    let sample = Sample::new();
    let common = sample.common();
    let pages: Vec<i32> = sample.seq_lens.iter().map(|s| (s + 15) / 16).collect();
    let indptr: Vec<i32> = std::iter::once(0)
        .chain(pages.iter().scan(0, |acc, p| {
            *acc += p;
            Some(*acc)
        }))
        .collect();
    let last: Vec<i32> = sample.seq_lens.iter().map(|s| if s % 16 == 0 { 16 } else { s % 16 }).collect();
    let mut fi = Builder::new(&lib, "FLASHINFER", &spec(), &config(90)).unwrap();
    assert_eq!(fi.reorder_batch_threshold().unwrap(), Some(1));
    let md = fi.build(0, &common, false).unwrap();
    assert_eq!(md.int("num_decodes").unwrap(), 3);
    assert_eq!(md.int("num_prefills").unwrap(), 2);
    assert_eq!(i32s(&md, "paged_kv_indptr_cpu"), indptr);
    assert_eq!(indptr, [0, 3, 10, 12, 18, 20]);
    assert_eq!(i32s(&md, "paged_kv_last_page_len_cpu"), last);
    assert_eq!(i32s(&md, "prefill_qo_indptr_cpu"), [0, 32, 52]);
    let mut flex = Builder::new(&lib, "FLEX_ATTENTION", &spec(), &config(90)).unwrap();
    let md = flex.build(0, &common, false).unwrap();
    let doc_ids = i32s(&md, "doc_ids");
    let expected: Vec<i32> = (0..5).flat_map(|r| std::iter::repeat(r as i32).take(QUERY[r] as usize)).collect();
    assert_eq!(doc_ids, expected);
    assert_eq!(&i32s(&md, "decode_offset")[..5], CONTEXT); // a max_num_seqs buffer, as vLLM 0.33
    assert_eq!(i32s(&md, "num_blocks_per_seq"), pages);
    let mut tree = Builder::new(&lib, "TREE_ATTN", &spec(), &config(90)).unwrap();
    let md = tree.build(0, &common, false).unwrap();
    let bias = md.tensor("tree_attn_bias").unwrap().unwrap();
    assert_eq!(bias.shape(), &[2, 2]);
    assert_eq!(bias.dtype(), DType::FLOAT32);
    let bias = bias.to_vec::<f32>().unwrap();
    assert_eq!(bias[0], 0.0);
    assert_eq!(bias[1], f32::NEG_INFINITY);
    assert_eq!(i32s(&md, "prefill_query_start_loc"), [0, 32, 52]);
    let mut triton = Builder::new(&lib, "TRITON_ATTN", &spec(), &config(90)).unwrap();
    let md = triton.build(0, &common, false).unwrap();
    let softmax = md.tensor("softmax_segm_output").unwrap().unwrap();
    assert_eq!(softmax.shape(), &[16, 32, 16, 128]);
    assert!(matches!(md.get("seq_threshold_3D").unwrap(), FieldValue::Int(16)));
}

#[test]
fn build_groups_equals_each_builders_own_build() {
    // attn_build_groups (ABI 1.7): two FLASH_ATTN groups (block 16 and a sliding window) in one
    // call, each result equal to a twin builder's own build; an error names builders[i].
    let sample = Sample::new();
    let common = sample.common();
    let mut swa = spec();
    swa.kind = libattn::KvCacheKind::SlidingWindow;
    swa.sliding_window = 64;
    let lib = library();
    let mut a = flash_attn(90);
    let mut b = Builder::new(&lib, "FLASH_ATTN", &swa, &config(90)).expect("sliding window");
    let mut a1 = flash_attn(90);
    let mut b1 = Builder::new(&lib, "FLASH_ATTN", &swa, &config(90)).expect("sliding window");
    let singles = [a1.build(0, &common, false).expect("a1"), b1.build(0, &common, false).expect("b1")];
    {
        let mut group = [&mut a, &mut b];
        let grouped = Builder::build_groups(&mut group, None, &common, false).expect("group");
        assert_eq!(grouped.len(), 2);
        for (g, s) in grouped.iter().zip(singles.iter()) {
            let (gf, sf) = (g.fields().unwrap(), s.fields().unwrap());
            assert_eq!(gf.len(), sf.len());
            for (x, y) in gf.iter().zip(sf.iter()) {
                assert_eq!(x.name, y.name);
                match (&x.value, &y.value) {
                    (FieldValue::Tensor(tx), FieldValue::Tensor(ty)) => {
                        assert_eq!(tx.shape(), ty.shape(), "{}", x.name);
                        if tx.dtype() == DType::INT32 {
                            assert_eq!(tx.as_slice::<i32>().unwrap(), ty.as_slice::<i32>().unwrap(), "{}", x.name);
                        }
                    }
                    (vx, vy) => assert_eq!(format!("{vx:?}"), format!("{vy:?}"), "{}", x.name),
                }
            }
        }
    }
    let mut group = [&mut a, &mut b];
    let e = Builder::build_groups(&mut group, Some(&[0, -1]), &common, false).expect_err("negative prefix");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("builders[1]: common_prefix_len=-1"), "{e}");
    // the binding's own refusals: no builder, a prefix per builder, one stream
    let e = Builder::build_groups(&mut [], None, &common, false).expect_err("no builder");
    assert!(e.message.contains("at least one builder"), "{e}");
    let e = Builder::build_groups(&mut group, Some(&[0]), &common, false).expect_err("one prefix");
    assert!(e.message.contains("common_prefix_lens has 1 entries for 2 builders"), "{e}");
    // SAFETY: never used for device work (host builders ignore the stream; the call refuses).
    group[1].set_stream(unsafe { libattn::Stream::from_raw(8 as *mut std::ffi::c_void) });
    let e = Builder::build_groups(&mut group, None, &common, false).expect_err("two streams");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("builders[1] builds on stream 0x8"), "{e}");
    group[1].set_stream(libattn::Stream::DEFAULT);
    assert_eq!(Builder::build_groups(&mut group, None, &common, false).expect("again").len(), 2);
}
