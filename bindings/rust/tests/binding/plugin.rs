//! Plugins: the example plugin loaded from $ATTN_EXAMPLE_PLUGIN, its backend built, unload
//! refused while a builder exists, and a plugin dropped while busy left loaded safely.
use libattn::{Builder, CommonMetadata, ErrorCode, Library};

use crate::support::{config, example_plugin_path, library, registry_lock, spec, Sample};

#[test]
fn a_missing_plugin_is_a_clean_error() {
    let lib = library();
    let e = lib.load_plugin("/nonexistent/libplugin.so").expect_err("no such plugin");
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("/nonexistent/libplugin.so"), "{e}");
}

#[test]
fn example_plugin_lifecycle() {
    let _lock = registry_lock();
    let lib = library();
    let before = lib.backend_count();
    let plugin = lib.load_plugin(example_plugin_path()).expect("load the example plugin");
    assert_eq!(plugin.name(), "example_plugin");
    assert_eq!(lib.backend_count(), before + 1);
    assert_eq!(lib.backend_name(before).unwrap(), "EXAMPLE_PAGED");
    let e = lib.load_plugin(example_plugin_path()).expect_err("its backend is registered already");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("EXAMPLE_PAGED"), "{e}");

    let mut b = Builder::new(&lib, "EXAMPLE_PAGED", &spec(), &config(90)).unwrap();
    assert_eq!(b.reorder_batch_threshold().unwrap(), Some(1));
    assert!(b.supports_update_block_table().unwrap());
    let sample = Sample::new();
    let common = sample.common();
    let md = b.build(0, &common, false).expect("EXAMPLE_PAGED build");
    assert_eq!(md.kind(), "EXAMPLE_PAGED");
    assert_eq!(md.len(), 8);
    let context: Vec<i32> =
        sample.seq_lens.iter().zip(sample.query_start_loc.windows(2)).map(|(s, w)| s - (w[1] - w[0])).collect();
    assert_eq!(context, crate::support::CONTEXT);
    assert_eq!(md.tensor("context_lens").unwrap().unwrap().as_slice::<i32>().unwrap(), &context[..]);
    assert_eq!(md.int("num_decodes").unwrap(), 3);
    // libattn 1.2's clone copies the plugin builder's context_lens buffer (1.1's kept viewing
    // it, and the binding refuses such clones there): the copy survives the next build
    let kept = md.clone_owned().expect("a plugin backend's clone");
    drop(md);
    let (q2, s2) = ([0, 1, 2, 3], [5, 6, 7]);
    let table = [1, 2, 3];
    let slots: [i64; 3] = [16, 32, 48];
    let next = CommonMetadata::new(&q2, &s2, &table, 1, &slots).unwrap();
    let md2 = b.build(0, &next, false).expect("EXAMPLE_PAGED build of another batch");
    assert_eq!(md2.tensor("context_lens").unwrap().unwrap().as_slice::<i32>().unwrap(), &[4, 5, 6]);
    drop(md2);
    assert_eq!(kept.tensor("context_lens").unwrap().unwrap().as_slice::<i32>().unwrap(), &context[..]);
    drop(kept);
    let e = b.build(16, &common, false).expect_err("no cascade");
    assert_eq!(e.code, ErrorCode::Unsupported);
    assert!(e.message.contains("EXAMPLE_PAGED has no cascade attention"), "{e}");

    // busy while its builder exists: the plugin comes back
    let (plugin, e) = plugin.unload().expect_err("a builder exists");
    assert_eq!(e.code, ErrorCode::Busy);
    drop(b);
    plugin.unload().map_err(|(_, e)| e).expect("unload after the builder");
    assert_eq!(lib.backend_count(), before);
    assert!(!lib.backends().unwrap().iter().any(|n| n == "EXAMPLE_PAGED"));

    // dropped while busy, with every Library handle gone first: nothing dangles, the plugin
    // stays loaded and its builder keeps working
    let path = crate::support::library_path();
    let lib2 = Library::load(&path).unwrap();
    let plugin = lib2.load_plugin(example_plugin_path()).unwrap();
    let mut b = Builder::new(&lib2, "EXAMPLE_PAGED", &spec(), &config(90)).unwrap();
    drop(lib2);
    drop(plugin);
    assert_eq!(b.build(0, &common, false).unwrap().int("num_decodes").unwrap(), 3);
    assert!(lib.backends().unwrap().iter().any(|n| n == "EXAMPLE_PAGED"));
    drop(b);
}
