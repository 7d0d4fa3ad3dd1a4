//! Errors: the library's codes and messages come through, in order, and bad input names the
//! argument and the value.
use libattn::{Builder, CommonMetadata, Error, ErrorCode, KvDtype, TensorArg};

use crate::support::{config, library, spec, Sample};

#[test]
fn status_strings_are_the_librarys() {
    let lib = library();
    for code in 1..=8 {
        assert_eq!(ErrorCode::from_raw(code).description(), lib.status_string(code), "code {code}");
        assert_eq!(ErrorCode::from_raw(code).as_raw(), code);
    }
    assert_eq!(lib.status_string(0), "ok");
    assert_eq!(lib.status_string(99), "unknown status");
    assert_eq!(ErrorCode::from_raw(99), ErrorCode::Unknown(99));
    assert_eq!(ErrorCode::from_raw(99).description(), "unknown status");
}

#[test]
fn error_is_a_std_error_with_code_and_message() {
    let lib = library();
    let e = Builder::new(&lib, "NO_SUCH_BACKEND", &spec(), &config(90)).expect_err("unknown backend");
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("NO_SUCH_BACKEND"), "{e}");
    assert_eq!(e.to_string(), format!("[not found] {}", e.message));
    let boxed: Box<dyn std::error::Error> = Box::new(e.clone());
    assert_eq!(boxed.to_string(), e.to_string());
    let _: &Error = &e;
}

#[test]
fn bad_spec_and_config_name_the_field() {
    let lib = library();
    let mut s = spec();
    s.block_size = 0;
    let e = Builder::new(&lib, "FLASH_ATTN", &s, &config(90)).expect_err("block_size 0");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("block_size=0"), "{e}");
    let mut s = spec();
    s.dtype = KvDtype::Auto;
    let e = Builder::new(&lib, "FLASH_ATTN", &s, &config(90)).expect_err("spec dtype AUTO");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(e.message, "kv_cache_spec->dtype=0 is not an ATTN_KV_DTYPE_* value (1..6)");
    let mut c = config(90);
    c.max_num_seqs = -3;
    let e = Builder::new(&lib, "FLASH_ATTN", &spec(), &c).expect_err("max_num_seqs -3");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("max_num_seqs=-3"), "{e}");
    let e = lib.backend_cudagraph_support("FLASH_ATTN", &s, &config(90)).expect_err("registry query");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    let mut c = config(90);
    c.speculative_token_tree = Some("[(0,)]\0".into());
    let e = Builder::new(&lib, "TREE_ATTN", &spec(), &c).expect_err("a NUL byte");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("speculative_token_tree"), "{e}");
    let e = Builder::new(&lib, "FLASH\0ATTN", &spec(), &config(90)).expect_err("a NUL byte");
    assert!(e.message.contains("backend") && e.message.contains("NUL byte at 5"), "{e}");
}

#[test]
fn a_bad_batch_names_the_argument_and_value_and_keeps_the_old_metadata() {
    let lib = library();
    let mut b = Builder::new(&lib, "FLASH_ATTN", &spec(), &config(90)).expect("builder");
    let mut sample = Sample::new();
    sample.seq_lens[2] = 0;
    let e = b.build(0, &sample.common(), false).expect_err("seq_lens[2] below its query");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(e.message, "common->seq_lens[2]=0 is less than its query length 1");
    sample.seq_lens[2] = 17;
    // a block table too narrow for the longest sequence
    let narrow = Sample::with(&crate::support::CONTEXT, &crate::support::QUERY, 6);
    let e = b.build(0, &narrow.common(), false).expect_err("6 columns for 7 blocks");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(
        e.message,
        "common->block_table_tensor has 6 columns but request 1 needs cdiv(seq_lens[1]=100, block_size=16)=7 blocks"
    );
    // wrong dtype: seq_lens as int64
    let seq64: Vec<i64> = sample.seq_lens.iter().map(|&s| s as i64).collect();
    let mut c = sample.common();
    c.seq_lens = TensorArg::new(&seq64);
    let e = b.build(0, &c, false).expect_err("int64 seq_lens");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(e.message, "common->seq_lens has dtype int64, expected int32");
    // a negative common prefix
    let e = b.build(-1, &sample.common(), false).expect_err("common_prefix_len -1");
    assert!(e.message.contains("common_prefix_len=-1"), "{e}");
    // num_reqs beyond the tensors
    let mut c = sample.common();
    c.num_reqs = 6;
    let e = b.build(0, &c, false).expect_err("num_reqs 6");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(e.message, "common->query_start_loc has shape (6,), expected (7,)");
    // the binding's own checks
    let e =
        CommonMetadata::new(&sample.query_start_loc, &sample.seq_lens, &sample.block_table, 7, &sample.slot_mapping)
            .expect_err("width 7");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert!(e.message.contains("block_table has 320 entries"), "{e}");
    assert!(TensorArg::matrix(&[1i32, 2, 3], 0).is_err());
    assert!(TensorArg::matrix(&[1i32, 2, 3], 2).expect_err("3 % 2").message.contains("not a matrix of width 2"));
}
