//! ABI 1.5: vLLM 0.33's draft decode metadata refresh through
//! [`Builder::supports_draft_decode_metadata_update`] and [`Builder::update_draft_decode_metadata`].
use libattn::{Builder, ErrorCode};

use crate::support::{config, library, spec, Sample};

#[test]
fn draft_decode_metadata_update() {
    let lib = library();
    let sample = Sample::new();
    let common = sample.common();
    let mut fa = Builder::new(&lib, "FLASH_ATTN", &spec(), &config(90)).unwrap();
    assert!(fa.supports_draft_decode_metadata_update().unwrap());
    let owned = fa.build(0, &common, false).unwrap().clone_owned().unwrap();
    fa.update_draft_decode_metadata(&owned).expect("FLASH_ATTN without DCP");
    assert_eq!(owned.tensor("seq_lens").unwrap().unwrap().as_slice::<i32>().unwrap(), &sample.seq_lens[..]);

    let mut triton = Builder::new(&lib, "TRITON_ATTN", &spec(), &config(90)).unwrap();
    assert!(triton.supports_draft_decode_metadata_update().unwrap());
    let e = triton.update_draft_decode_metadata(&owned).expect_err("another backend's metadata");
    assert_eq!(e.code, ErrorCode::InvalidArgument);
    assert_eq!(e.message, "metadata was built by 'FLASH_ATTN', this builder is 'TRITON_ATTN'");

    let mut dcp_config = config(90);
    dcp_config.decode_context_parallel_size = 2;
    let mut dcp = Builder::new(&lib, "FLASH_ATTN", &spec(), &dcp_config).unwrap();
    assert!(!dcp.supports_draft_decode_metadata_update().unwrap());
    let dcp_md = dcp.build(0, &common, false).unwrap().clone_owned().unwrap();
    let e = dcp.update_draft_decode_metadata(&dcp_md).expect_err("DCP");
    assert_eq!(e.code, ErrorCode::Unsupported);
    assert!(e.message.starts_with("FLASH_ATTN does not support update_draft_decode_metadata: decode context parallel"));

    let fi100 = Builder::new(&lib, "FLASHINFER", &spec(), &config(100)).unwrap();
    assert!(fi100.supports_draft_decode_metadata_update().unwrap());
    let fi90 = Builder::new(&lib, "FLASHINFER", &spec(), &config(90)).unwrap();
    assert!(!fi90.supports_draft_decode_metadata_update().unwrap());
}
