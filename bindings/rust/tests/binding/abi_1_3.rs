//! ABI 1.3: `attn_backend_info` through [`Library::backend_info`], and `attn_get_api`'s table
//! against the functions the crate resolved by name.
use libattn::{BackendOrigin, ErrorCode, KvCacheKind};

use crate::layout::header_function_table;
use crate::support::{example_plugin_path, library, registry_lock};

#[test]
fn every_backend_describes_itself() {
    let _lock = registry_lock();
    let lib = library();
    let infos = lib.backend_infos().unwrap();
    assert_eq!(infos.iter().map(|i| i.name.clone()).collect::<Vec<_>>(), lib.backends().unwrap());
    let mut all = 0u32;
    for (k, info) in infos.iter().enumerate() {
        assert_eq!(info.index, k);
        assert_eq!(info.origin, BackendOrigin::Builtin, "{}", info.name);
        assert!(!info.kinds().is_empty(), "{}", info.name);
        all |= info.kv_cache_kinds;
    }
    // between them the built-in backends build for every kind of spec
    let every = KvCacheKind::ALL.iter().fold(0u32, |m, k| m | 1 << k.as_raw());
    assert_eq!(all, every);
    let e = lib.backend_info(infos.len()).expect_err("past the end");
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("out of range"), "{}", e.message);
}

#[test]
fn a_plugin_backend_says_so() {
    let _lock = registry_lock();
    let lib = library();
    let plugin = lib.load_plugin(example_plugin_path()).expect("load the example plugin");
    let info = lib.backend_info(lib.backend_count() - 1).unwrap();
    assert_eq!(info.name, "EXAMPLE_PAGED");
    assert_eq!(info.origin, BackendOrigin::Plugin);
    assert_eq!(info.vllm_release, "plugin");
    assert!(info.vllm_names.is_empty());
    assert_eq!(info.kinds(), KvCacheKind::ALL.to_vec());
    drop(info);
    plugin.unload().map_err(|(_, e)| e).expect("unload");
}

#[test]
fn the_function_table_is_the_resolved_symbols() {
    let lib = library();
    let version = lib.version();
    let api = lib.api();
    let mut table: *const libattn::sys::attn_api_t = std::ptr::null();
    // SAFETY: a valid out-pointer.
    let err = unsafe { (api.attn_get_api)(version.major, version.minor, &mut table) };
    assert!(err.is_null());
    let names = header_function_table();
    let word = std::mem::size_of::<usize>();
    // SAFETY: the library's static table, struct_size bytes long.
    let size = unsafe { (*table).struct_size };
    assert_eq!(size, word + names.len() * std::mem::size_of::<*const ()>());
    // SAFETY: `names.len()` pointers follow struct_size (checked just above).
    let members = unsafe { std::slice::from_raw_parts(table.cast::<u8>().add(word).cast::<*const ()>(), names.len()) };
    // sys::Api is in the same order (layout::the_table_is_in_the_order_of_attn_api_functions);
    // each of its entries is the address dlsym gave for the name.
    // SAFETY: Api is a struct of function pointers only, one per name.
    let resolved =
        unsafe { std::slice::from_raw_parts((api as *const libattn::sys::Api).cast::<*const ()>(), names.len()) };
    assert_eq!(std::mem::size_of::<libattn::sys::Api>(), names.len() * std::mem::size_of::<*const ()>());
    for (k, name) in names.iter().enumerate() {
        assert_eq!(members[k], resolved[k], "{name}");
    }
    // a newer minor is refused, naming both versions
    let mut untouched = table;
    // SAFETY: a valid out-pointer.
    let err = unsafe { (api.attn_get_api)(version.major, version.minor + 1, &mut untouched) };
    assert!(!err.is_null());
    // SAFETY: a live error, destroyed once.
    let message = unsafe {
        let m = std::ffi::CStr::from_ptr((api.attn_error_message)(err)).to_string_lossy().into_owned();
        (api.attn_error_destroy)(err);
        m
    };
    assert!(message.contains(&format!("{}.{}", version.major, version.minor + 1)), "{message}");
    assert_eq!(untouched, table);
}
