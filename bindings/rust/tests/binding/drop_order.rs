//! Drop order: handles keep the library loaded, clones outlive builders, and everything may be
//! dropped in any order.
use libattn::{BackendOrigin, Builder, ErrorCode, KvCacheKind, Library, TensorArg};

use crate::support::{config, library, spec, Sample};

#[test]
fn builder_and_clone_outlive_every_library_handle() {
    let sample = Sample::new();
    let common = sample.common();
    let lib = library();
    let mut b = Builder::new(&lib, "FLASH_ATTN", &spec(), &config(90)).unwrap();
    drop(lib); // the builder holds the library
    let kept = {
        let md = b.build(16, &common, false).unwrap();
        md.clone_owned().unwrap()
    };
    let md = b.build(0, &common, false).unwrap();
    assert!(md.int("common_prefix_len").is_err()); // no cascade fields without a prefix (0.33)
    drop(b); // the clone holds the library too
    assert_eq!(kept.int("common_prefix_len").unwrap(), 16);
    let suffix = kept.tensor("suffix_kv_lens").unwrap().unwrap();
    assert_eq!(suffix.as_slice::<i32>().unwrap(), &[25, 84, 1, 80, 4]);
    drop(kept);
}

#[test]
fn many_builders_and_libraries_in_any_order() {
    let path = crate::support::library_path();
    let libs: Vec<Library> = (0..3).map(|_| Library::load(&path).unwrap()).collect();
    let mut builders: Vec<Builder> = libs
        .iter()
        .flat_map(|l| ["FLASH_ATTN", "TRITON_ATTN"].map(|n| Builder::new(l, n, &spec(), &config(90)).unwrap()))
        .collect();
    drop(libs);
    let sample = Sample::new();
    let common = sample.common();
    let mut kept = Vec::new();
    for b in builders.iter_mut() {
        kept.push(b.build(0, &common, false).unwrap().clone_owned().unwrap());
    }
    builders.reverse();
    drop(builders);
    for k in &kept {
        assert_eq!(k.int("num_actual_tokens").unwrap(), 55);
    }
}

#[test]
fn builders_move_between_threads() {
    let lib = library();
    // the built-in backends that build for the full-attention spec (another family refuses it)
    let builders: Vec<Builder> = lib
        .backend_infos()
        .unwrap()
        .iter()
        .filter(|i| i.origin == BackendOrigin::Builtin && i.accepts(KvCacheKind::FullAttention))
        .filter_map(|i| match Builder::new(&lib, &i.name, &spec(), &config(90)) {
            Ok(b) => Some(b),
            Err(e) if e.code == ErrorCode::Unsupported => None,
            Err(e) => panic!("{}: {e}", i.name),
        })
        .collect();
    assert!(builders.len() >= 2, "{} builders", builders.len());
    let handles: Vec<_> = builders
        .into_iter()
        .map(|mut b| {
            std::thread::spawn(move || {
                let sample = Sample::new();
                // the tokens' positions (DEEPSEEK_V41_COMPRESSOR requires them)
                let positions: Vec<i64> = crate::support::CONTEXT
                    .iter()
                    .zip(crate::support::QUERY.iter())
                    .flat_map(|(&c, &q)| (c..c + q).map(i64::from))
                    .collect();
                let mut common = sample.common();
                common.positions = Some(TensorArg::new(&positions[..]));
                for _ in 0..50 {
                    let md = b.build(0, &common, false).unwrap();
                    match md.tensor("seq_lens") {
                        // FLEX_ATTENTION hands out its max_num_seqs buffer, as vLLM 0.33
                        Ok(Some(t)) => assert_eq!(&t.as_slice::<i32>().unwrap()[..5], &sample.seq_lens[..]),
                        // a composite's child not chosen for the batch (TRITON_FLASHINFER's TRITON_ATTN), CACHE_ONLY_ATTN
                        Ok(None) => {}
                        Err(e) => assert_eq!(e.code, ErrorCode::NotFound), // a backend without the field
                    }
                }
                b
            })
        })
        .collect();
    for h in handles {
        drop(h.join().expect("a builder thread"));
    }
}
