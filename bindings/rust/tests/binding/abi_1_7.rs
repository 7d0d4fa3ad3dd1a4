//! ABI 1.7: vLLM 0.33's remaining utilities: naive_query_lens on the sample batch, the
//! attention output view, and the runner decisions of cp_utils and ubatch_utils (values from
//! vLLM's code).
use libattn::{DType, Device, ErrorCode, TensorArg, FA_VERSION_NONE};

use crate::support::{library, Sample};

#[test]
fn naive_query_lens_and_attn_output_view() {
    let lib = library();
    let sample = Sample::new();
    let common = sample.common();
    let n = sample.seq_lens.len();
    let mut out = vec![-7i32; n + 1];
    lib.common_metadata_naive_query_lens(&common, &mut out).unwrap();
    for r in 0..n {
        assert_eq!(out[r], sample.query_start_loc[r + 1] - sample.query_start_loc[r]);
    }
    assert_eq!(out[n], -7);
    let e = lib.common_metadata_naive_query_lens(&common, &mut out[..n - 1]).expect_err("too short");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("out"), "{e}");

    let mut data = vec![0f32; 2 * 3 * 4 * 5];
    // SAFETY: a compact (2, 3, 4, 5) float32 host tensor over `data`.
    let x = unsafe {
        TensorArg::from_raw_parts(data.as_mut_ptr().cast(), Device::CPU, DType::FLOAT32, &[2, 3, 4, 5], None, 0)
    }
    .unwrap();
    assert_eq!(lib.reshape_attn_output_for_spec_decode(&x).unwrap(), ([6, 4, 5], [20, 5, 1]));
    // a transposed output: torch's view refuses, so does libattn
    // SAFETY: the (2, 3, 4, 5) transpose of a (3, 2, 4, 5) tensor over the same 120 floats.
    let t = unsafe {
        TensorArg::from_raw_parts(
            data.as_mut_ptr().cast(),
            Device::CPU,
            DType::FLOAT32,
            &[2, 3, 4, 5],
            Some(&[20, 40, 5, 1]),
            0,
        )
    }
    .unwrap();
    let e = lib.reshape_attn_output_for_spec_decode(&t).expect_err("not mergeable");
    assert!(e.message.contains("cannot be viewed as [6, 4, 5]"), "{e}");
    let flat = TensorArg::new(&data[..6]);
    let e = lib.reshape_attn_output_for_spec_decode(&flat).expect_err("1-D");
    assert_eq!(e.message, "attn_output must be 4D, got 1D");
}

#[test]
fn runner_decisions() {
    let lib = library();
    assert_eq!(lib.get_dcp_dummy_context_len(4, 16, true, true, false, false).unwrap(), 64);
    assert_eq!(lib.get_dcp_dummy_context_len(2, 1, true, false, true, true).unwrap(), 2);
    assert_eq!(lib.get_dcp_dummy_context_len(2, 1, false, true, true, true).unwrap(), 0);
    let e = lib.get_dcp_dummy_context_len(2, 0, true, true, false, false).unwrap_err();
    assert_eq!(e.message, "cp_kv_cache_interleave_size=0 must be positive");
    assert!(lib.should_split_fa2_dcp_context_attention(2, 5, 4, 1, 3).unwrap());
    assert!(!lib.should_split_fa2_dcp_context_attention(2, 5, 4, 0, 4).unwrap());
    assert!(!lib.should_split_fa2_dcp_context_attention(FA_VERSION_NONE, 5, 4, 1, 3).unwrap());
    let e = lib.should_split_fa2_dcp_context_attention(2, 5, 4, 5, 0).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(lib.is_last_ubatch_empty(10, 17, 3).unwrap());
    assert!(!lib.is_last_ubatch_empty(11, 17, 3).unwrap());
    assert_eq!(lib.get_num_ubatches(true, 4).unwrap(), 2);
    assert_eq!(lib.get_num_ubatches(false, 3).unwrap(), 3);
    assert_eq!(lib.get_num_ubatches(false, 0).unwrap(), 1);
    assert!(lib.check_ubatch_thresholds(false, 3, 32, 512, 512, false).unwrap());
    assert!(!lib.check_ubatch_thresholds(true, 0, 32, 512, 31, true).unwrap());
    let e = lib.get_num_ubatches(false, -1).unwrap_err();
    assert_eq!(e.message, "ubatch_size=-1 is negative");
}
