//! Loading: from a path, from $ATTN_LIBRARY, the version check, and clean errors for a missing
//! file, a file that is no library, and a library that lacks the ABI's symbols.
use libattn::{ErrorCode, Library};

use crate::support::{example_plugin_path, library};

#[test]
fn loads_and_checks_the_version() {
    let lib = library();
    let v = lib.version();
    assert_eq!(v.major, 1);
    let (major, minor) = (libattn::sys::ATTN_VERSION_MAJOR, libattn::sys::ATTN_VERSION_MINOR);
    assert_eq!(v.major, major);
    assert!(v.minor >= minor, "library minor {} is older than the binding's {major}.{minor}", v.minor);
    lib.check_version(major, minor).expect("the binding's ABI");
    lib.check_version(1, 0).expect("ABI 1.0 callers");
    let e = lib.check_version(2, 0).expect_err("major 2");
    assert_eq!(e.code, ErrorCode::AbiMismatch);
    assert!(e.message.starts_with("the caller was compiled against libattn 2.0 but the loaded library is 1."), "{e}");
    let e = lib.check_version(1, v.minor + 1).expect_err("a newer minor");
    assert_eq!(e.code, ErrorCode::AbiMismatch);
}

#[test]
fn open_without_a_path_reads_the_environment() {
    let env = crate::support::library_path();
    let lib = Library::open(None).expect("Library::open(None) with ATTN_LIBRARY set");
    assert_eq!(lib.path(), env);
    let explicit = Library::open(Some(std::path::Path::new(&env))).expect("an explicit path");
    assert!(explicit.same_as(&lib));
}

#[test]
fn a_missing_library_is_a_clean_error() {
    let e = Library::load("/nonexistent/dir/libattn.so.1").expect_err("no such file");
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("/nonexistent/dir/libattn.so.1"), "{e}");
    assert!(e.message.contains("No such file"), "dlerror's text: {e}");
    let e = Library::load("libattn_that_does_not_exist.so.1").expect_err("not on the search path");
    assert_eq!(e.code, ErrorCode::NotFound);
    let not_a_library = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let e = Library::load(not_a_library).expect_err("a text file");
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("Cargo.toml") && e.message.contains("invalid ELF header"), "{e}");
    let e = Library::load("lib\0attn").expect_err("a NUL byte");
    assert!(e.message.contains("NUL"), "{e}");
}

#[test]
fn a_library_without_the_symbols_names_the_first_missing_one() {
    // the example plugin is a shared library that exports only attn_plugin_entry
    let e = Library::load(example_plugin_path()).expect_err("not libattn");
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("symbol attn_error_code is missing"), "{e}");
    let abi = format!("is not libattn {}.{}", libattn::sys::ATTN_VERSION_MAJOR, libattn::sys::ATTN_VERSION_MINOR);
    assert!(e.message.contains(&abi), "{e}");
}

#[test]
fn devices() {
    let lib = library();
    assert_eq!(lib.device_count(libattn::DeviceType::Cpu).expect("CPU count"), 1);
    // built without CUDA: unsupported; with CUDA: a count (0 without a GPU)
    match lib.device_count(libattn::DeviceType::Cuda) {
        Ok(n) => assert!(n >= 0),
        Err(e) => assert_eq!(e.code, ErrorCode::Unsupported, "{e}"),
    }
}
