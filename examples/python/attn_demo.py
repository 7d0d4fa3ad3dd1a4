#!/usr/bin/env python3
"""libattn demo in Python: what examples/c/attn_demo.c does, through the ctypes binding.

Lists every backend with its CUDA graph support and reorder threshold, builds FLASH_ATTN
metadata for a mixed batch (three decodes, a chunked prefill, a fresh prefill) and prints it,
then the same batch through every other backend and two of vLLM's wrappers.

    python3 examples/python/attn_demo.py [path/to/libattn.so.1] [--plugin path/to/plugin.so]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "bindings", "python"))
import libattn  # noqa: E402
from libattn.registry import BackendOrigin  # noqa: E402

BLOCK, MAX_LEN = 16, 1024


def config(capability, cache_dtype=libattn.KvDtype.AUTO):
    return libattn.BuilderConfig(max_num_seqs=256, max_num_batched_tokens=8192,
                                 max_model_len=MAX_LEN, num_attention_heads=32,
                                 device_capability=capability, num_gpu_blocks=4096,
                                 cache_dtype=cache_dtype)


def sample_batch():
    """Three decodes, a chunked prefill (64 cached + 32 new) and a fresh prefill (20 tokens); the
    last two are still in their prompts (vLLM 0.33's is_prefilling, which the Mamba family
    requires); the tokens' positions (which DEEPSEEK_V41_COMPRESSOR requires)."""
    context, query = [40, 99, 16, 64, 0], [1, 1, 1, 32, 20]
    seq = np.add(context, query).astype(np.int32)
    table = np.zeros((5, MAX_LEN // BLOCK), np.int32)
    blocks = -(-seq // BLOCK)
    table[np.arange(MAX_LEN // BLOCK) < blocks[:, None]] = np.arange(1, blocks.sum() + 1)
    slots = [table[r, p // BLOCK] * BLOCK + p % BLOCK
             for r in range(5) for p in range(context[r], seq[r])]
    return dict(query_start_loc=np.cumsum([0] + query, dtype=np.int32), seq_lens=seq,
                block_table=table, slot_mapping=np.array(slots, np.int64),
                is_prefilling=[False, False, False, True, True],
                positions=np.array([p for r in range(5) for p in range(context[r], seq[r])],
                                   np.int64))


def show(name, value):
    if isinstance(value, np.ndarray):
        dims = ", ".join(map(str, value.shape)) + ("," if value.ndim == 1 else "")
        text = f"tensor ({dims}) {value.dtype}"
        if value.ndim <= 2:  # scratch buffers of more dimensions: the shape says enough
            head = value[0][:8] if value.ndim == 2 else value.reshape(-1)[:12]
            items = ", ".join(f"{v:g}" if isinstance(v, float) else str(v) for v in head.tolist())
            more = ", ..." if value.ndim == 1 and value.size > 12 else ""
            text += f"{' row 0:' if value.ndim == 2 else ''} [{items}{more}]"
        value = text
    print(f"  {name:<32} {value}")


# vLLM's MLAAttentionSpec: one latent head of 512 + 64; block 128 suits every MLA kernel.
MLA_SPEC = libattn.KvCacheSpec(block_size=128, num_kv_heads=1, head_size=576,
                               kind=libattn.KvCacheKind.MLA)
# The same with block 256 (DeepSeek V4's sparse MLA kernels), tried after it.
MLA256_SPEC = libattn.KvCacheSpec(block_size=256, num_kv_heads=1, head_size=576,
                                  kind=libattn.KvCacheKind.MLA)
# vLLM's MambaSpec: a state slot per request ("none" cache mode); Mamba2 scans 16-token chunks.
MAMBA_SPEC = libattn.KvCacheSpec(block_size=BLOCK, num_kv_heads=1, head_size=1,
                                 kind=libattn.KvCacheKind.MAMBA, mamba_chunk_size=16)


def backend_builder(lib, info, spec, capability):
    """A builder of a backend on the first of the demo's specs (full attention, MLA, Mamba) whose
    kind the backend accepts (``attn_backend_info``) and that it builds for, with the default
    cache dtype and then FP8 (the backends whose caches are FP8 only, as TOKENSPEED_MLA): a spec
    per kind, no list of backend names. A plugin's backend accepts every kind as far as the
    library knows, so its builder's Unsupported moves on to the next kind. Returns the spec, the
    cache dtype and the builder, or None when every attempt is unsupported (a backend that needs
    its model's settings, as DEEPSEEK_V41_SPARSE_INDEXER)."""
    kinds = libattn.KvCacheKind
    for kind, kind_spec in ((kinds.FULL_ATTENTION, spec), (kinds.MLA, MLA_SPEC),
                            (kinds.MLA, MLA256_SPEC), (kinds.MAMBA, MAMBA_SPEC)):
        if not info.accepts(kind):
            continue
        for cache_dtype in (libattn.KvDtype.AUTO, libattn.KvDtype.FP8_E4M3):
            try:
                return (kind_spec, cache_dtype,
                        lib.builder(info.name, kind_spec, config(capability, cache_dtype)))
            except libattn.Unsupported:
                continue
    return None


def build_and_show(lib, backend, spec, cfg, batch, fields):
    with lib.builder(backend, spec, cfg) as b:
        md = b.build(batch)
        print(f"\n{md.kind} ({len(md)} fields):")
        for f in fields:
            show(f, md[f])


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("library", nargs="?", default=None, help="libattn.so.1 (default: $ATTN_LIBRARY)")
    p.add_argument("--plugin", help="a plugin library to load first")
    args = p.parse_args()
    lib = libattn.load(args.library) if args.library else libattn.load()
    print(f"libattn {'.'.join(map(str, lib.version))} loaded with ctypes from {lib.path}")
    plugin = lib.load_plugin(args.plugin) if args.plugin else None
    if plugin:
        print(f"plugin loaded from {args.plugin}")

    spec = libattn.KvCacheSpec(block_size=BLOCK, num_kv_heads=8, head_size=128)
    print(f"\nKV cache spec: full attention, block_size {BLOCK}, 8 KV heads, head_size 128, bf16")
    print("(the MLA family for an MLA spec: block_size 128, one 576-wide latent head; the Mamba family for a MAMBA spec)")
    print(f"{lib.backend_count()} backend(s):")
    print(f"  {'backend':<16} {'cudagraph (sm90)':<29} {'cudagraph (sm80)':<29} "
          f"{'cudagraph (sm100)':<29} {'reorder':<8} update_block_table")
    for info in lib.backend_infos():
        got = backend_builder(lib, info, spec, 90)
        if got is None:
            print(f"  {info.name:<16} (refused on the demo's specs and configs: it needs its model's settings)")
            continue
        backend_spec, cache_dtype, builder = got
        with builder as b:
            reorder, update = b.reorder_batch_threshold, b.supports_update_block_table
        levels = [lib.backend_cudagraph_support(info.name, backend_spec,
                                                config(c, cache_dtype)).name
                  for c in (90, 80, 100)]
        print(f"  {info.name:<16} {levels[0]:<29} {levels[1]:<29} {levels[2]:<29} "
              f"{str(reorder):<8} {'yes' if update else 'no'}")

    arrays = sample_batch()
    batch = libattn.CommonMetadata(**arrays)
    print("\nSample batch: 3 decodes (seq 41, 100, 17), a chunked prefill (64 cached + 32 new),\n"
          f"a fresh prefill (20 tokens); {batch.num_actual_tokens} tokens, block_size {BLOCK}, "
          "host build.\n")
    with lib.builder("FLASH_ATTN", spec, config(90)) as fa:
        md = fa.build(batch)
        fa_fields = {name for name, _ in md.items()}
        print(f"FLASH_ATTN metadata ({len(md)} fields; None fields omitted):")
        for name, value in md.items():
            if value is not None:
                show(name, value)
        print("\nThe same batch with a 16-token common prefix (cascade attention):")
        md = fa.build(batch, common_prefix_len=16)
        for f in ("use_cascade", "common_prefix_len", "cu_prefix_query_lens", "prefix_kv_lens",
                  "suffix_kv_lens", "scheduler_max_seqlen_k"):
            show(f, md[f])

        print("\nThe same batch through the other backends (the fields FLASH_ATTN lacks, a few "
              "each):")
        for info in lib.backend_infos():
            if (info.origin != BackendOrigin.BUILTIN or info.name == md.kind
                    or not info.accepts(libattn.KvCacheKind.FULL_ATTENTION)):
                continue
            try:
                builder = lib.builder(info.name, spec, config(90))
            except libattn.Unsupported:
                continue  # a family of its own (MLA, Mamba): shown below
            with builder as b:
                other = b.build(batch)
                print(f"\n{other.kind} ({len(other)} fields):")
                own = [(n, v) for n, v in other.items() if v is not None and n not in fa_fields]
                tensors = [(n, v) for n, v in own if isinstance(v, np.ndarray)][:3]
                scalars = [(n, v) for n, v in own if not isinstance(v, np.ndarray)][:3]
                for n, v in tensors + scalars:
                    show(n, v)
        print("\nThe Mamba family builds for a MAMBA spec (MambaSpec: state index = block table "
              "column 0, 16-token scan chunks):")
        build_and_show(lib, "MAMBA2", MAMBA_SPEC, config(90), batch,
                       ["num_decodes", "num_prefills", "state_indices_tensor_d",
                        "state_indices_tensor_p", "query_start_loc_p", "has_initial_states_p",
                        "cu_chunk_seqlen_p", "seq_idx_p", "last_chunk_indices_p"])
        print("\nThe MLA family builds for an MLA spec (block 128, one 576-wide latent head):")
        build_and_show(lib, "FLASHMLA", MLA_SPEC, config(90), batch,
                       ["num_decodes", "num_prefills", "decode_seq_lens",
                        "prefill_query_start_loc", "prefill_chunked_context_chunk_cu_seq_lens",
                        "prefill_chunked_context_chunk_num_context_tokens", "chunked_prefill_workspace_size"])

        print("\nvLLM's wrappers, asked for by the spec and the config:")
        local = libattn.KvCacheSpec(BLOCK, 8, 128, kind=libattn.KvCacheKind.CHUNKED_LOCAL_ATTENTION,
                                    attention_chunk_size=32)
        level = lib.backend_cudagraph_support("FLASH_ATTN", local, config(90)).name
        print("  FLASH_ATTN with a CHUNKED_LOCAL_ATTENTION spec (chunk 32): "
              f"CUDA graph support {level}")
        build_and_show(lib, "FLASH_ATTN", local, config(90), batch,
                       ["query_start_loc", "seq_lens", "block_table", "virtual_req"])
        fast_cfg = config(90)
        fast_cfg.kv_sharing_fast_prefill = 1
        fast = libattn.CommonMetadata(**arrays, logits_indices_padded=[0, 1, 2, 34, 54],
                                      num_logits_indices=5)
        build_and_show(lib, "FLASH_ATTN", spec, fast_cfg, fast,
                       ["query_start_loc", "num_actual_tokens", "max_query_len",
                        "logits_indices_padded", "num_logits_indices"])

        print("\nBad input gives an error, not a crash (seq_lens[2] set below its query length):")
        arrays["seq_lens"][2] = 0
        try:
            fa.build(libattn.CommonMetadata(**arrays))
        except libattn.AttnError as e:
            print(f"  {e}")
    if plugin:
        plugin.unload()


if __name__ == "__main__":
    main()
