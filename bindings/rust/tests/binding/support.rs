//! What the tests share: the library from $ATTN_LIBRARY, the sample batch of the C demo, and
//! its values computed here by hand.
use std::sync::{Mutex, MutexGuard, OnceLock};

use libattn::{BuilderConfig, CommonMetadata, KvCacheSpec, Library};

/// $ATTN_LIBRARY; panics with what to do when it is unset.
pub fn library_path() -> String {
    let path = std::env::var("ATTN_LIBRARY").unwrap_or_default();
    if path.is_empty() {
        panic!(
            "ATTN_LIBRARY is not set: point it at libattn.so.1 (e.g. ATTN_LIBRARY=$PWD/build/libattn.so.1 cargo test)"
        );
    }
    path
}

/// The library named by $ATTN_LIBRARY.
pub fn library() -> Library {
    let path = library_path();
    Library::load(&path).unwrap_or_else(|e| panic!("cannot load ATTN_LIBRARY={path}: {e}"))
}

/// $ATTN_EXAMPLE_PLUGIN; panics with what to do when it is unset.
pub fn example_plugin_path() -> String {
    let path = std::env::var("ATTN_EXAMPLE_PLUGIN").unwrap_or_default();
    if path.is_empty() {
        panic!("ATTN_EXAMPLE_PLUGIN is not set: point it at libattn_example_plugin.so (built beside libattn)");
    }
    path
}

/// Serialises the tests that change the registry (plugins) against those that list it.
pub fn registry_lock() -> MutexGuard<'static, ()> {
    static LOCK: OnceLock<Mutex<()>> = OnceLock::new();
    LOCK.get_or_init(|| Mutex::new(())).lock().unwrap_or_else(|e| e.into_inner())
}

pub const BLOCK_SIZE: i32 = 16;
pub const WIDTH: usize = 64; // max_model_len 1024 / 16

/// The demo's spec: full attention, block 16, 8 KV heads, head 128, bf16.
pub fn spec() -> KvCacheSpec {
    KvCacheSpec::new(BLOCK_SIZE, 8, 128)
}

/// The demo's config for a compute capability.
pub fn config(capability: i32) -> BuilderConfig {
    let mut c = BuilderConfig::new(256, 8192, 1024, 32);
    c.device_capability = capability;
    c.num_gpu_blocks = 4096;
    c
}

/// The C demo's batch: three decodes (contexts 40, 99, 16), a chunked prefill (64 cached + 32
/// new) and a fresh prefill of 20; block ids from 1, allocated request by request.
pub struct Sample {
    pub query_start_loc: Vec<i32>,
    pub seq_lens: Vec<i32>,
    pub block_table: Vec<i32>,
    pub slot_mapping: Vec<i64>,
}

pub const CONTEXT: [i32; 5] = [40, 99, 16, 64, 0];
pub const QUERY: [i32; 5] = [1, 1, 1, 32, 20];

impl Sample {
    pub fn new() -> Sample {
        Sample::with(&CONTEXT, &QUERY, WIDTH)
    }

    pub fn with(context: &[i32], query: &[i32], width: usize) -> Sample {
        let n = context.len();
        let mut s = Sample {
            query_start_loc: vec![0],
            seq_lens: Vec::new(),
            block_table: vec![0; n * width],
            slot_mapping: Vec::new(),
        };
        let mut next_block = 1;
        for r in 0..n {
            let seq = context[r] + query[r];
            s.seq_lens.push(seq);
            s.query_start_loc.push(s.query_start_loc[r] + query[r]);
            for j in 0..(seq + BLOCK_SIZE - 1) / BLOCK_SIZE {
                s.block_table[r * width + j as usize] = next_block;
                next_block += 1;
            }
            for p in context[r]..seq {
                let block = s.block_table[r * width + (p / BLOCK_SIZE) as usize];
                s.slot_mapping.push(block as i64 * BLOCK_SIZE as i64 + (p % BLOCK_SIZE) as i64);
            }
        }
        s
    }

    pub fn width(&self) -> usize {
        self.block_table.len() / self.seq_lens.len()
    }

    pub fn common(&self) -> CommonMetadata<'_> {
        CommonMetadata::new(&self.query_start_loc, &self.seq_lens, &self.block_table, self.width(), &self.slot_mapping)
            .expect("the sample batch")
    }
}
