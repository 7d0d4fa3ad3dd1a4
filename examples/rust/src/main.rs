//! libattn demo in Rust, as examples/c/attn_demo.c: loads libattn with dlopen, lists every
//! backend with its CUDA graph support (sm90/sm80/sm100) and reorder threshold, builds
//! FLASH_ATTN metadata for a mixed batch (decodes, a chunked prefill, a fresh prefill) on the
//! host and prints it, then the same batch through every other backend and two of vLLM's
//! wrappers (chunked local attention, KV-sharing fast prefill).
//!
//!   attn_demo [path/to/libattn.so.1] [--plugin path/to/plugin.so]
//!
//! Without a path it uses $ATTN_LIBRARY, then "libattn.so.1" from the loader's search path.
use std::path::PathBuf;
use std::process::ExitCode;

use libattn::{
    BackendInfo, BackendOrigin, Builder, BuilderConfig, CommonMetadata, CudagraphSupport, DType, ErrorCode, Field,
    FieldValue, KvCacheKind, KvCacheSpec, KvDtype, Library, Metadata, Result, TensorArg, TensorView,
};

const REQS: usize = 5;
const BLOCK_SIZE: i32 = 16;
const MAX_MODEL_LEN: i32 = 1024;
const WIDTH: usize = (MAX_MODEL_LEN / BLOCK_SIZE) as usize;

/// vLLM's MLAAttentionSpec: one 576-wide latent head; block 128 suits every MLA kernel.
fn mla_spec() -> KvCacheSpec {
    KvCacheSpec { kind: KvCacheKind::Mla, ..KvCacheSpec::new(128, 1, 576) }
}

/// vLLM's MambaSpec: a state slot per request ("none" cache mode); Mamba2 scans 16-token chunks.
fn mamba_spec() -> KvCacheSpec {
    KvCacheSpec { kind: KvCacheKind::Mamba, mamba_chunk_size: 16, ..KvCacheSpec::new(16, 1, 1) }
}

/// A builder of a backend on the first of the demo's specs (full attention, MLA, Mamba) whose kind
/// the backend accepts (`attn_backend_info`) and that it builds for, with the config's cache dtype
/// and then FP8 (the backends whose caches are FP8 only, as TOKENSPEED_MLA): a spec per kind, no
/// list of backend names. A plugin's backend accepts every kind as far as the library knows, so
/// its builder's `Unsupported` moves on to the next kind. Returns the spec, the config the builder
/// was made with and the builder.
fn backend_builder(
    lib: &Library,
    info: &BackendInfo,
    spec: &KvCacheSpec,
    config: &BuilderConfig,
) -> Result<(KvCacheSpec, BuilderConfig, Builder)> {
    // the MLA spec again with block 256: DeepSeek V4's sparse MLA kernels
    let mla256 = KvCacheSpec { block_size: 256, ..mla_spec() };
    let candidates = [
        (KvCacheKind::FullAttention, *spec),
        (KvCacheKind::Mla, mla_spec()),
        (KvCacheKind::Mla, mla256),
        (KvCacheKind::Mamba, mamba_spec()),
    ];
    let mut last = None;
    for (kind, kind_spec) in candidates {
        if !info.accepts(kind) {
            continue;
        }
        for cache_dtype in [config.cache_dtype, KvDtype::Fp8E4m3] {
            let with_dtype = BuilderConfig { cache_dtype, ..config.clone() };
            match Builder::new(lib, &info.name, &kind_spec, &with_dtype) {
                Ok(builder) => return Ok((kind_spec, with_dtype, builder)),
                Err(e) if e.code == ErrorCode::Unsupported => last = Some(e),
                Err(e) => return Err(e),
            }
        }
    }
    Err(last.unwrap_or_else(|| {
        libattn::Error::new(ErrorCode::Unsupported, format!("{} builds on none of the demo's specs", info.name))
    }))
}

/// is_prefilling of the sample batch (int32, one of the dtypes libattn accepts for it).
static IS_PREFILLING: [i32; REQS] = [0, 0, 0, 1, 1];

/// The sample batch's data: three decodes, a chunked prefill (64 cached, 32 scheduled) and a
/// fresh prefill; block 0 is vLLM's null block.
struct Batch {
    query_start_loc: Vec<i32>,
    seq_lens: Vec<i32>,
    block_table: Vec<i32>,
    slot_mapping: Vec<i64>,
    positions: Vec<i64>,
}

fn make_batch() -> Batch {
    const CONTEXT: [i32; REQS] = [40, 99, 16, 64, 0];
    const QUERY: [i32; REQS] = [1, 1, 1, 32, 20];
    let mut b =
        Batch {
            query_start_loc: vec![0],
            seq_lens: vec![],
            block_table: vec![0; REQS * WIDTH],
            slot_mapping: vec![],
            positions: vec![],
        };
    let mut next_block = 1;
    for r in 0..REQS {
        let seq = CONTEXT[r] + QUERY[r];
        b.seq_lens.push(seq);
        b.query_start_loc.push(b.query_start_loc[r] + QUERY[r]);
        for j in 0..(seq + BLOCK_SIZE - 1) / BLOCK_SIZE {
            b.block_table[r * WIDTH + j as usize] = next_block;
            next_block += 1;
        }
        for p in CONTEXT[r]..seq {
            let block = b.block_table[r * WIDTH + (p / BLOCK_SIZE) as usize] as i64;
            b.slot_mapping.push(block * BLOCK_SIZE as i64 + (p % BLOCK_SIZE) as i64);
            b.positions.push(p as i64);
        }
    }
    b
}

impl Batch {
    /// The batch as vLLM 0.33 describes it: the last two requests are still in their prompts
    /// (is_prefilling, which the Mamba family requires); the tokens' positions (which
    /// DEEPSEEK_V41_COMPRESSOR requires).
    fn common(&self) -> Result<CommonMetadata<'_>> {
        let mut c =
            CommonMetadata::new(&self.query_start_loc, &self.seq_lens, &self.block_table, WIDTH, &self.slot_mapping)?;
        c.is_prefilling = Some(TensorArg::new(&IS_PREFILLING[..]));
        c.positions = Some(TensorArg::new(&self.positions[..]));
        Ok(c)
    }
}

/// The demo's engine config: 256 sequences, 8192 tokens, 32 query heads, a KV cache of 4096
/// blocks (FLEX_ATTENTION needs the count), compute capability `capability`.
fn demo_config(capability: i32) -> BuilderConfig {
    let mut c = BuilderConfig::new(256, 8192, MAX_MODEL_LEN, 32);
    c.device_capability = capability;
    c.num_gpu_blocks = 4096;
    c
}

fn join<T: ToString>(values: &[T]) -> String {
    values.iter().map(T::to_string).collect::<Vec<_>>().join(", ")
}

fn tensor_values(t: &TensorView<'_>) -> Option<Vec<String>> {
    let show = |v: Vec<String>| Some(v);
    match t.dtype() {
        DType::INT32 => show(t.to_vec::<i32>().ok()?.iter().map(i32::to_string).collect()),
        DType::INT64 => show(t.to_vec::<i64>().ok()?.iter().map(i64::to_string).collect()),
        DType::FLOAT32 => show(t.to_vec::<f32>().ok()?.iter().map(f32::to_string).collect()),
        _ => None,
    }
}

fn format_tensor(t: &TensorView<'_>) -> String {
    let shape = t.shape();
    let mut s = if shape.len() == 1 {
        format!("tensor ({},) {}", shape[0], t.dtype())
    } else {
        format!("tensor ({}) {}", join(shape), t.dtype())
    };
    if !t.device().is_host() {
        s += &format!(" on {}", t.device());
        return s;
    }
    if shape.len() > 2 {
        return s; // scratch buffers: the shape says enough
    }
    let Some(values) = tensor_values(t) else { return s };
    let values = if shape.len() == 2 {
        s += " row 0:";
        values[..(shape[1] as usize).min(8).min(values.len())].to_vec()
    } else {
        values
    };
    let shown = values.len().min(12);
    s += &format!(" [{}{}]", values[..shown].join(", "), if shown < values.len() { ", ..." } else { "" });
    s
}

fn print_field(f: &Field<'_>) {
    let value = match f.value {
        FieldValue::None => "None".to_owned(),
        FieldValue::Int(v) => v.to_string(),
        FieldValue::Bool(v) => (if v { "True" } else { "False" }).to_owned(),
        FieldValue::Float(v) => v.to_string(),
        FieldValue::Tensor(t) => format_tensor(&t),
    };
    println!("  {:<32} {value}", f.name);
}

fn print_fields(md: &Metadata<'_, '_>, names: &[&str]) -> Result<()> {
    for &name in names {
        print_field(&Field { name, value: md.get(name)? });
    }
    Ok(())
}

fn list_backends(lib: &Library, spec: &KvCacheSpec) -> Result<()> {
    let infos = lib.backend_infos()?;
    println!("{} backend(s):", infos.len());
    println!(
        "  {:<16} {:<29} {:<29} {:<29} {:<8} update_block_table",
        "backend", "cudagraph (sm90)", "cudagraph (sm80)", "cudagraph (sm100)", "reorder"
    );
    for info in &infos {
        let name = &info.name;
        let (backend_spec, built_with, builder) = match backend_builder(lib, info, spec, &demo_config(90)) {
            Ok(built) => built,
            Err(e) if e.code == ErrorCode::Unsupported => {
                // a backend that needs its model's settings (DEEPSEEK_V41_SPARSE_INDEXER)
                println!("  {name:<16} (refused on the demo's specs and configs: it needs its model's settings)");
                continue;
            }
            Err(e) => return Err(e),
        };
        let levels: Vec<CudagraphSupport> = [90, 80, 100]
            .iter()
            .map(|&c| {
                let config = BuilderConfig { cache_dtype: built_with.cache_dtype, ..demo_config(c) };
                lib.backend_cudagraph_support(name, &backend_spec, &config)
            })
            .collect::<Result<_>>()?;
        let reorder = builder.reorder_batch_threshold()?.map_or("None".to_owned(), |t| t.to_string());
        let update = if builder.supports_update_block_table()? { "yes" } else { "no" };
        println!(
            "  {name:<16} {:<29} {:<29} {:<29} {reorder:<8} {update}",
            levels[0].name(),
            levels[1].name(),
            levels[2].name()
        );
    }
    Ok(())
}

/// Builds the batch with `backend` and prints the metadata kind, its field count and `fields`
/// (every field that is not None when `fields` is empty).
fn build_and_show(
    lib: &Library,
    backend: &str,
    spec: &KvCacheSpec,
    config: &BuilderConfig,
    common: &CommonMetadata<'_>,
    fields: &[&str],
) -> Result<()> {
    let mut builder = Builder::new(lib, backend, spec, config)?;
    let md = builder.build(0, common, false)?;
    println!("\n{} ({} fields):", md.kind(), md.len());
    if fields.is_empty() {
        md.fields()?.iter().filter(|f| !f.value.is_none()).for_each(print_field);
        return Ok(());
    }
    print_fields(&md, fields)
}

/// Prints the set fields of `md` that FLASH_ATTN's metadata (`reference`: its field names)
/// lacks, what makes a backend's metadata its own: its tensors first, then its scalars, at most
/// `max` of each.
fn print_own_fields(md: &Metadata<'_, '_>, reference: &[String], max: usize) -> Result<()> {
    let fields = md.fields()?;
    let own: Vec<&Field<'_>> =
        fields.iter().filter(|f| !f.value.is_none() && !reference.iter().any(|r| r == f.name)).collect();
    let is_tensor = |f: &&&Field<'_>| matches!(f.value, FieldValue::Tensor(_));
    own.iter().filter(is_tensor).take(max).for_each(|f| print_field(f));
    own.iter().filter(|f| !is_tensor(f)).take(max).for_each(|f| print_field(f));
    Ok(())
}

fn every_backend(lib: &Library, batch: &Batch, spec: &KvCacheSpec, reference: &[String]) -> Result<()> {
    let hopper = demo_config(90);
    let common = batch.common()?;
    println!("\nThe same batch through the other backends (the fields FLASH_ATTN lacks, a few each):");
    for info in lib.backend_infos()? {
        if info.origin != BackendOrigin::Builtin
            || info.name == "FLASH_ATTN"
            || !info.accepts(KvCacheKind::FullAttention)
        {
            continue;
        }
        let mut builder = match Builder::new(lib, &info.name, spec, &hopper) {
            Ok(b) => b,
            Err(e) if e.code == ErrorCode::Unsupported => continue, // a family of its own: below
            Err(e) => return Err(e),
        };
        let md = builder.build(0, &common, false)?;
        println!("\n{} ({} fields):", md.kind(), md.len());
        print_own_fields(&md, reference, 3)?;
    }
    println!(
        "\nThe Mamba family builds for a MAMBA spec (MambaSpec: state index = block table column 0, 16-token scan chunks):"
    );
    build_and_show(
        lib,
        "MAMBA2",
        &mamba_spec(),
        &hopper,
        &common,
        &[
            "num_decodes",
            "num_prefills",
            "state_indices_tensor_d",
            "state_indices_tensor_p",
            "query_start_loc_p",
            "has_initial_states_p",
            "cu_chunk_seqlen_p",
            "seq_idx_p",
            "last_chunk_indices_p",
        ],
    )?;
    println!("\nThe MLA family builds for an MLA spec (block 128, one 576-wide latent head):");
    build_and_show(
        lib,
        "FLASHMLA",
        &mla_spec(),
        &hopper,
        &common,
        &[
            "num_decodes",
            "num_prefills",
            "decode_seq_lens",
            "prefill_query_start_loc",
            "prefill_chunked_context_chunk_cu_seq_lens",
            "prefill_chunked_context_chunk_num_context_tokens",
            "chunked_prefill_workspace_size",
        ],
    )?;
    for info in lib.backend_infos()?.iter().filter(|i| i.origin == BackendOrigin::Plugin) {
        // the plugins' backends, every field that is set
        let (kind_spec, built_with, _) = backend_builder(lib, info, spec, &hopper)?;
        build_and_show(lib, &info.name, &kind_spec, &built_with, &common, &[])?;
    }

    println!("\nvLLM's wrappers, asked for by the spec and the config:");
    let local = KvCacheSpec { kind: KvCacheKind::ChunkedLocalAttention, attention_chunk_size: 32, ..*spec };
    let level = lib.backend_cudagraph_support("FLASH_ATTN", &local, &hopper)?;
    println!("  FLASH_ATTN with a CHUNKED_LOCAL_ATTENTION spec (chunk 32): CUDA graph support {level}");
    build_and_show(
        lib,
        "FLASH_ATTN",
        &local,
        &hopper,
        &common,
        &["query_start_loc", "seq_lens", "block_table", "virtual_req"],
    )?;
    let mut fast = hopper.clone();
    fast.kv_sharing_fast_prefill = true; // KV-sharing layers compute only the logits tokens
    let logits = [0, 1, 2, 34, 54]; // the last token of each request
    let mut with_logits = batch.common()?;
    with_logits.logits_indices_padded = Some(TensorArg::new(&logits));
    with_logits.num_logits_indices = logits.len() as i64;
    build_and_show(
        lib,
        "FLASH_ATTN",
        spec,
        &fast,
        &with_logits,
        &["query_start_loc", "num_actual_tokens", "max_query_len", "logits_indices_padded", "num_logits_indices"],
    )
}

fn run(path: Option<PathBuf>, plugin_path: Option<PathBuf>) -> Result<()> {
    let lib = Library::open(path.as_deref())?; // loads, resolves every symbol, checks ABI 1.1
    let v = lib.version();
    println!("libattn {}.{}.{} loaded with dlopen from {}", v.major, v.minor, v.patch, lib.path());
    let _plugin = match plugin_path {
        Some(p) => {
            let plugin = lib.load_plugin(&p)?;
            println!("plugin loaded from {}", p.display());
            Some(plugin)
        }
        None => None,
    };

    let spec = KvCacheSpec::new(BLOCK_SIZE, 8, 128);
    println!("\nKV cache spec: full attention, block_size {BLOCK_SIZE}, 8 KV heads, head_size 128, bf16");
    println!(
        "(the MLA family for an MLA spec: block_size 128, one 576-wide latent head; the Mamba family for a MAMBA spec)"
    );
    list_backends(&lib, &spec)?;

    let mut builder = Builder::new(&lib, "FLASH_ATTN", &spec, &demo_config(90))?;
    let mut batch = make_batch();
    let reference: Vec<String>; // FLASH_ATTN's field names
    println!(
        "\nSample batch: 3 decodes (seq 41, 100, 17), a chunked prefill (64 cached + 32 new),\n\
         a fresh prefill (20 tokens); {} tokens, block_size {BLOCK_SIZE}, host build.\n",
        batch.slot_mapping.len()
    );
    {
        let common = batch.common()?;
        let md = builder.build(0, &common, false)?;
        reference = md.fields()?.iter().map(|f| f.name.to_owned()).collect();
        println!("FLASH_ATTN metadata ({} fields; None fields omitted):", md.len());
        md.fields()?.iter().filter(|f| !f.value.is_none()).for_each(print_field);

        println!("\nThe same batch with a 16-token common prefix (cascade attention):");
        let md = builder.build(16, &common, false)?;
        print_fields(
            &md,
            &[
                "use_cascade",
                "common_prefix_len",
                "cu_prefix_query_lens",
                "prefix_kv_lens",
                "suffix_kv_lens",
                "scheduler_max_seqlen_k",
            ],
        )?;
    }

    every_backend(&lib, &batch, &spec, &reference)?;

    println!("\nBad input gives an error, not a crash (seq_lens[2] set below its query length):");
    batch.seq_lens[2] = 0;
    let common = batch.common()?;
    match builder.build(0, &common, false) {
        Err(e) => println!("  {e}"),
        Ok(_) => println!("  (the build unexpectedly succeeded)"),
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let (mut path, mut plugin) = (None, None);
    while let Some(arg) = args.next() {
        if arg == "--plugin" {
            match args.next() {
                Some(p) => plugin = Some(PathBuf::from(p)),
                None => {
                    eprintln!("attn_demo: --plugin needs a path");
                    return ExitCode::from(2);
                }
            }
        } else {
            path = Some(PathBuf::from(arg));
        }
    }
    match run(path, plugin) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("attn_demo: {e}");
            ExitCode::FAILURE
        }
    }
}
