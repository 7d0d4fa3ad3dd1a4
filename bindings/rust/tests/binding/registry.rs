//! The backend registry: names in order, CUDA graph support per capability, builder queries.
use libattn::{Builder, CudagraphSupport, ErrorCode, KvCacheKind, PerLayerParams};

use crate::support::{config, library, registry_lock, spec};

use CudagraphSupport::*;

#[test]
fn built_in_backends_and_their_support() {
    let _lock = registry_lock();
    let lib = library();
    let names = lib.backends().unwrap();
    let built_in = ["FLASH_ATTN", "FLASHINFER", "TRITON_ATTN", "FLEX_ATTENTION", "TREE_ATTN", "CPU_ATTN"];
    assert_eq!(&names[..6], &built_in);
    assert_eq!(lib.backend_count(), names.len());
    let e = lib.backend_name(names.len()).expect_err("past the end");
    assert_eq!(e.code, ErrorCode::NotFound);
    // (sm90, sm80, sm100), reorder threshold, update_block_table, as README.md's table
    let expected = [
        ([Always, UniformBatch, UniformBatch], None, true),
        ([UniformSingleTokenDecode, UniformSingleTokenDecode, UniformBatch], Some(1), false),
        ([Always, Always, Always], None, false),
        ([Always, Always, Always], None, false),
        ([Never, Never, Never], Some(2), false),
        ([Never, Never, Never], None, false),
    ];
    for (name, (levels, reorder, update)) in built_in.iter().zip(expected) {
        for (capability, level) in [90, 80, 100].into_iter().zip(levels) {
            assert_eq!(
                lib.backend_cudagraph_support(name, &spec(), &config(capability)).unwrap(),
                level,
                "{name} sm{capability}"
            );
        }
        let b = Builder::new(&lib, name, &spec(), &config(90)).unwrap();
        assert_eq!(b.backend_name(), *name);
        assert_eq!(b.cudagraph_support().unwrap(), levels[0], "{name}");
        assert_eq!(b.reorder_batch_threshold().unwrap(), reorder, "{name}");
        assert_eq!(b.supports_update_block_table().unwrap(), update, "{name}");
    }
    let mut local = spec();
    local.kind = KvCacheKind::ChunkedLocalAttention;
    local.attention_chunk_size = 32;
    assert_eq!(lib.backend_cudagraph_support("FLASH_ATTN", &local, &config(90)).unwrap(), Never);
    let e = lib.backend_cudagraph_support("NOPE", &spec(), &config(90)).expect_err("unknown");
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("NOPE"), "{e}");
    assert!(lib.builder_workspace_size("FLASH_ATTN", &spec(), &config(90)).unwrap() > 0);
}

#[test]
fn global_hyperparameters() {
    let lib = library();
    let a = PerLayerParams { window_left: 127, ..PerLayerParams::default() };
    let b = PerLayerParams { logits_soft_cap: Some(30.0), ..a };
    let g = lib.infer_global_hyperparameters(&[a, a]).unwrap();
    assert_eq!(g.global, a);
    assert!(g.has_same_window_lefts && g.has_same_all_params);
    let g = lib.infer_global_hyperparameters(&[b, a]).unwrap();
    assert_eq!(g.global.logits_soft_cap, Some(30.0));
    assert!(g.has_same_window_lefts && !g.has_same_all_params);
    let e = lib.infer_global_hyperparameters(&[]).expect_err("no layers");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("No attention layers found in the model"), "{e}");
}
