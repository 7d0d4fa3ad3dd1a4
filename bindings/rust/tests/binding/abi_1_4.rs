//! ABI 1.4: `attn_get_vllm_release` through [`Library::vllm_release`], and vLLM 0.33.0's
//! CommonAttentionMetadata fields of [`CommonMetadata`] through `attn_common_metadata_unpadded`.
use libattn::sys;
use libattn::{CommonMetadata, ErrorCode, TensorArg};

use crate::support::{library, Sample};

#[test]
fn the_vllm_release_is_the_headers() {
    let lib = library();
    let (release, numbers) = lib.vllm_release().unwrap();
    assert_eq!(release, "0.33.0");
    assert_eq!(release.as_bytes(), &sys::ATTN_VLLM_RELEASE[..sys::ATTN_VLLM_RELEASE.len() - 1]);
    assert_eq!((numbers.major, numbers.minor, numbers.patch), (0, 33, 0));
}

#[test]
fn the_0_33_fields_are_sliced_by_unpadded() {
    let lib = library();
    let sample = Sample::new(); // five requests, the last two prefills
    let n = sample.seq_lens.len();
    let tokens = *sample.query_start_loc.last().unwrap() as usize;
    let bound: Vec<i32> = sample.seq_lens.iter().map(|s| s + 1).collect();
    let positions: Vec<i64> = (0..tokens as i64).collect();
    let causal: Vec<i32> = vec![1, 0, 1, 1, 0];
    let req_idx: Vec<i64> = (0..n as i64).rev().collect();
    let ranges = CommonMetadata::doc_ranges([(3, &[(0, 4), (6, 9)][..]), (1, &[(2, 5)][..])]);
    assert_eq!(ranges, vec![1, 2, 5, 3, 0, 4, 3, 6, 9]);
    let rswa: Vec<i32> = vec![3; n];
    let replay: Vec<i32> = vec![0; n];
    let replay_start: Vec<i32> = (0..n as i32).collect(); // ABI 1.7
    let low: Vec<i32> = sample.seq_lens.iter().map(|s| s - 1).collect();
    let wrong: Vec<i32> = vec![0; tokens];
    let mut c = sample.common();
    c.max_seq_len += 1;
    c.seq_lens_cpu_upper_bound = Some(TensorArg::new(&bound));
    c.positions = Some(TensorArg::new(&positions));
    c.causal_per_request = Some(TensorArg::new(&causal));
    c.max_logits_per_req = Some(4);
    c.req_idx = Some(TensorArg::new(&req_idx));
    c.mm_req_doc_ranges = Some(TensorArg::matrix(&ranges, 3).unwrap());
    c.rswa_prefix_lens = Some(TensorArg::new(&rswa));
    c.replayssm_decode_base_cpu = Some(TensorArg::new(&replay));
    c.replay_start = Some(TensorArg::new(&replay_start));
    {
        let u = lib.common_metadata_unpadded(&c, 3, 3).unwrap();
        assert_eq!(u.tensor("seq_lens_cpu_upper_bound").unwrap().unwrap().to_vec::<i32>().unwrap(), bound[..3]);
        assert_eq!(u.tensor("causal_per_request").unwrap().unwrap().to_vec::<i32>().unwrap(), causal[..3]);
        assert_eq!(u.tensor("req_idx").unwrap().unwrap().to_vec::<i64>().unwrap(), req_idx[..3]);
        assert_eq!(u.int("max_logits_per_req").unwrap(), 4);
        assert_eq!(u.tensor("replay_start").unwrap().unwrap().to_vec::<i32>().unwrap(), replay_start[..3]);
        assert!(u.tensor("positions").unwrap().is_none(), "0.33's unpadded drops positions");
        assert!(u.tensor("mm_req_doc_ranges").unwrap().is_none());
        let back = u.to_common().unwrap();
        assert_eq!(back.max_logits_per_req, Some(4));
        assert!(back.seq_lens_cpu_upper_bound.is_some());
        assert!(back.positions.is_none());
        assert!(back.replay_start.is_some());
    }

    // a bound below the exact lengths is refused, naming the field
    c.seq_lens_cpu_upper_bound = Some(TensorArg::new(&low));
    let e = lib.common_metadata_unpadded(&c, 3, 3).expect_err("a bound below seq_lens");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("common->seq_lens_cpu_upper_bound[0]"), "{}", e.message);
    // positions of the wrong dtype
    c.seq_lens_cpu_upper_bound = None;
    c.positions = Some(TensorArg::new(&wrong));
    let e = lib.common_metadata_unpadded(&c, 3, 3).expect_err("int32 positions");
    assert!(e.message.contains("common->positions"), "{}", e.message);
}

#[test]
fn the_cudagraph_mode_resolution_is_vllm_0_33s() {
    use libattn::{CudagraphGroup, CudagraphMode, CudagraphResolveArgs, CudagraphSupport};
    let lib = library();
    let group =
        |support, bound| CudagraphGroup { support, backend_name: Some("G".into()), varlen_max_query_len: bound };
    // MRV1 rounds the sizes to multiples of 1 + k (values recorded from vLLM 0.33.0).
    let args = CudagraphResolveArgs {
        cudagraph_mode: CudagraphMode::Full,
        groups: vec![group(CudagraphSupport::UniformBatch, None)],
        uniform_decode_query_len: 7,
        cudagraph_capture_sizes: vec![1, 2, 4, 8, 16],
        max_cudagraph_capture_size: 16,
        ..Default::default()
    };
    let r = lib.resolve_cudagraph_mode_and_sizes(&args).unwrap();
    assert_eq!(r.mode, CudagraphMode::FullAndPiecewise);
    assert_eq!(r.capture_sizes, vec![7, 14]);
    assert_eq!(r.max_capture_size, 14);
    // FULL with a NEVER group raises.
    let never = CudagraphResolveArgs { groups: vec![group(CudagraphSupport::Never, None)], ..args.clone() };
    let e = lib.resolve_cudagraph_mode_and_sizes(&never).unwrap_err();
    assert_eq!(e.code, ErrorCode::Unsupported);
    assert!(e.message.contains("please try cudagraph_mode=PIECEWISE"), "{}", e.message);
    // Adaptive verification needs a bound of 1 + k.
    let adaptive = CudagraphResolveArgs {
        groups: vec![group(CudagraphSupport::UniformBatch, Some(2))],
        uniform_decode_query_len: 4,
        use_v2_model_runner: true,
        adaptive_verification: true,
        ..args.clone()
    };
    let e = lib.resolve_cudagraph_mode_and_sizes(&adaptive).unwrap_err();
    assert!(e.message.contains("G allows at most 2"), "{}", e.message);
}
