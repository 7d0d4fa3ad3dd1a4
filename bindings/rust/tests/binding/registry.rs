//! The backend registry: names in order, CUDA graph support per capability, builder queries.
use std::collections::HashMap;

use libattn::{BackendOrigin, Builder, CudagraphSupport, ErrorCode, KvCacheKind, PerLayerParams};

use crate::support::{config, library, registry_lock, spec};

use CudagraphSupport::*;

#[test]
fn built_in_backends_and_their_support() {
    let _lock = registry_lock();
    let lib = library();
    let names = lib.backends().unwrap();
    assert_eq!(lib.backend_count(), names.len());
    let e = lib.backend_name(names.len()).expect_err("past the end");
    assert_eq!(e.code, ErrorCode::NotFound);
    // the built-in backends come first
    let infos = lib.backend_infos().unwrap();
    assert!(infos.windows(2).all(|w| !(w[0].origin == BackendOrigin::Plugin && w[1].origin == BackendOrigin::Builtin)));
    // What README.md's table says of these backends (checked by name: their behaviour, not a
    // list to enumerate): (sm90, sm80, sm100), reorder threshold, update_block_table.
    let expected: HashMap<&str, ([CudagraphSupport; 3], Option<i32>, bool)> = HashMap::from([
        ("FLASH_ATTN", ([Always, UniformBatch, Always], None, true)),
        ("FLASHINFER", ([UniformBatch, UniformBatch, UniformBatch], Some(1), false)),
        ("TRITON_ATTN", ([Always, Always, Always], None, false)),
        ("FLEX_ATTENTION", ([Always, Always, Always], None, false)),
        ("TREE_ATTN", ([Never, Never, Never], Some(2), false)),
        ("CPU_ATTN", ([Never, Never, Never], None, false)),
    ]);
    let mut checked = 0;
    for info in infos.iter().filter(|i| i.origin == BackendOrigin::Builtin && i.accepts(KvCacheKind::FullAttention)) {
        let name = info.name.as_str();
        let Some(&(levels, reorder, update)) = expected.get(name) else { continue };
        checked += 1;
        for (capability, level) in [90, 80, 100].into_iter().zip(levels) {
            assert_eq!(
                lib.backend_cudagraph_support(name, &spec(), &config(capability)).unwrap(),
                level,
                "{name} sm{capability}"
            );
        }
        let b = Builder::new(&lib, name, &spec(), &config(90)).unwrap();
        assert_eq!(b.backend_name(), name);
        assert_eq!(b.cudagraph_support().unwrap(), levels[0], "{name}");
        assert_eq!(b.reorder_batch_threshold().unwrap(), reorder, "{name}");
        assert_eq!(b.supports_update_block_table().unwrap(), update, "{name}");
    }
    assert_eq!(checked, expected.len());
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

/// ABI 1.7: each backend's vLLM names, and each name builds with that backend's builder.
#[test]
fn vllm_names_resolve_to_their_backend() {
    let _lock = registry_lock();
    let lib = library();
    let infos = lib.backend_infos().unwrap();
    let names_of = |backend: &str| infos.iter().find(|i| i.name == backend).unwrap().vllm_names.clone();
    assert_eq!(names_of("MAMBA2"), ["MAMBA2", "MAMBA2_ATTN"]);
    assert_eq!(names_of("LINEAR_ATTN"), ["LINEAR_ATTN", "LINEAR"]);
    assert_eq!(names_of("ROCM_AITER_MLA"), ["ROCM_AITER_MLA", "ROCM_AITER_TRITON_MLA", "AITER_TRITON_MLA"]);
    assert_eq!(names_of("FLASH_ATTN"), ["FLASH_ATTN"]);
    assert!(names_of("TREE_ATTN").is_empty());
    let mut mamba = spec();
    mamba.kind = KvCacheKind::Mamba;
    (mamba.num_kv_heads, mamba.head_size, mamba.mamba_chunk_size) = (1, 1, 8);
    for (name, backend) in
        [("MAMBA2_ATTN", "MAMBA2"), ("MAMBA1_ATTN", "MAMBA1"), ("SHORT_CONV_ATTN", "SHORT_CONV"), ("LINEAR", "LINEAR_ATTN")]
    {
        let b = Builder::new(&lib, name, &mamba, &config(90)).unwrap();
        assert_eq!(b.backend_name(), backend);
        assert_eq!(
            lib.backend_cudagraph_support(name, &mamba, &config(90)).unwrap(),
            lib.backend_cudagraph_support(backend, &mamba, &config(90)).unwrap()
        );
    }
    let e = Builder::new(&lib, "mamba2_attn", &mamba, &config(90)).expect_err("not a name");
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("unknown backend 'mamba2_attn'"), "{}", e.message);
}
