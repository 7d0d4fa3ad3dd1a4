"""The ctypes mirrors against the C header: sizes (the ``*_STRUCT_SIZE`` values printed by
bindings/rust/tools/struct_probe.c for gcc on x86_64) and DLTensor's layout."""
import ctypes
import os
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

import libattn
from libattn import structs
from libattn.functions import OPTIONAL_SIGNATURES, SIGNATURES
from libattn.dlpack import DLManagedTensor

SIZES = {  # sizeof == *_STRUCT_SIZE for every struct of ABI 1.1 (no tail padding)
    "attn_device_t": 8, "attn_dtype_t": 4, "attn_tensor_t": 48, "attn_kv_cache_spec_t": 112,
    "attn_per_layer_params_t": 48, "attn_allocator_t": 40, "attn_builder_config_t": 376,
    "attn_common_metadata_t": 272, "attn_batch_split_t": 56, "attn_slot_mapping_args_t": 88,
    "attn_conv1d_info_t": 24, "attn_local_attention_out_t": 80, "attn_ubatch_slice_t": 40,
    "attn_ubatch_out_t": 48, "attn_cascade_query_t": 72, "attn_field_t": 48,
    "attn_backend_info_t": 48,
}


@pytest.mark.skipif(ctypes.sizeof(ctypes.c_void_p) != 8, reason="sizes are for 64-bit targets")
def test_struct_sizes_match_the_header():
    for name, size in SIZES.items():
        assert ctypes.sizeof(getattr(structs, name)) == size, name


def test_offsets_that_the_abi_promises():
    cfg = structs.attn_builder_config_t
    assert cfg.extension.offset + 8 == 136  # ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_0
    assert structs.attn_common_metadata_t.extension.offset + 8 == 152  # ..._STRUCT_SIZE_1_0
    # ..._STRUCT_SIZE_1_1
    assert structs.attn_common_metadata_t.logits_indices_padded_cpu.offset + 8 == 160
    # ..._STRUCT_SIZE_1_3 (1.2's, unchanged in 1.3), then 1.4's nine 8-byte fields
    assert structs.attn_common_metadata_t.is_prefilling.offset + 8 == 192
    assert structs.attn_common_metadata_t.replayssm_decode_base_cpu.offset + 8 == 264  # 1.4-1.6
    assert structs.attn_common_metadata_t.replay_start.offset + 8 == 272  # 1.7
    assert structs.attn_kv_cache_spec_t.extension.offset + 8 == 48  # ATTN_KV_CACHE_SPEC_..._1_0
    # ATTN_BACKEND_INFO_STRUCT_SIZE_1_3 (1.3-1.6), then 1.7's vllm_names
    assert structs.attn_backend_info_t.extension.offset + 8 == 40
    assert structs.attn_backend_info_t.vllm_names.offset + 8 == 48
    # ABI 1.6: four int32 after num_speculative_blocks (..._1_2 = 64) and eight after
    # enable_adaptive_verification (ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_4 = 264)
    assert structs.attn_kv_cache_spec_t.num_speculative_blocks.offset + 4 == 64
    assert structs.attn_kv_cache_spec_t.mamba_num_heads.offset + 4 == 80  # ..._STRUCT_SIZE_1_6
    # ABI 1.7: index_topk and topk_buffer_width (sparse MLA)
    assert structs.attn_kv_cache_spec_t.topk_buffer_width.offset + 4 == 88
    # ABI 1.7: sink_len and head_size_v after them (attention variants)
    assert structs.attn_kv_cache_spec_t.sink_len.offset == 88
    assert structs.attn_kv_cache_spec_t.head_size_v.offset + 4 == 96
    # ABI 1.7: tokens_per_state and reserved_1_7 after them (DeepSeek V4 sparse MLA)
    assert structs.attn_kv_cache_spec_t.tokens_per_state.offset == 96
    assert structs.attn_kv_cache_spec_t.reserved_1_7.offset + 4 == 104
    # ABI 1.7: block_stride_bytes and reserved_1_7_b after them (Step5's CSA tail ring)
    assert structs.attn_kv_cache_spec_t.block_stride_bytes.offset == 104
    assert structs.attn_kv_cache_spec_t.reserved_1_7_b.offset + 4 == 112
    assert cfg.enable_adaptive_verification.offset + 4 == 264
    assert cfg.use_eagle_block_drop.offset + 4 == 296
    # ABI 1.7: two int32 after reserved_1_6 (ATTN_BUILDER_CONFIG_STRUCT_SIZE_1_6 = 304)
    assert cfg.reserved_1_6.offset + 4 == 304
    assert cfg.use_prefill_query_quantization.offset + 4 == 312
    # then block_table_width and reserved_1_7 (the sparse indexers): 320 bytes
    assert cfg.block_table_width.offset == 312
    assert cfg.reserved_1_7.offset + 4 == 320
    # then the DeepSeek V4 / V4.1 inputs, three int32 pairs: 344 bytes
    assert [getattr(cfg, f).offset for f in (
        "platform_rocm", "prefill_context_parallel_size", "candidate_block_size",
        "candidate_topk_blocks", "indexer_kv_mxfp4", "sparse_indexer_topk_backend")] == \
        [320, 324, 328, 332, 336, 340]
    # then speculative_dspark and reserved_1_7_b (DSpark's non-causal SWA rows): 352 bytes
    assert [cfg.speculative_dspark.offset, cfg.reserved_1_7_b.offset] == [344, 348]
    # then block_pool_size and reserved_1_7_c (Whisper's causal block pooling): 360 bytes
    assert [cfg.block_pool_size.offset, cfg.reserved_1_7_c.offset] == [352, 356]
    # then rocm_aiter_shuffle_kv_cache and reserved_1_7_d (MiniMax-M3's AITER sparse PA): 368
    assert [cfg.rocm_aiter_shuffle_kv_cache.offset, cfg.reserved_1_7_d.offset] == [360, 364]
    # then sparse_num_index_heads and tensor_parallel_size (MiniMax-M3's indexer): 376 bytes
    assert [cfg.sparse_num_index_heads.offset, cfg.tensor_parallel_size.offset] == [368, 372]
    t = structs.attn_tensor_t  # DLTensor
    assert [t.data.offset, t.device.offset, t.ndim.offset, t.dtype.offset, t.shape.offset,
            t.strides.offset, t.byte_offset.offset] == [0, 8, 16, 20, 24, 32, 40]
    assert DLManagedTensor.deleter.offset == 56


def test_new_sets_struct_size():
    assert structs.new(structs.attn_field_t).struct_size == 48
    assert structs.new(structs.attn_builder_config_t).struct_size == 376


def _mirrors():
    return [getattr(structs, n) for n in structs.__all__
            if isinstance(getattr(structs, n), type) and issubclass(getattr(structs, n),
                                                                     ctypes.Structure)]


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler to read the header with")
def test_every_field_offset_matches_the_compiled_header(tmp_path):
    """Compiles a probe against include/attn_c.h printing sizeof, every offsetof and every
    *_STRUCT_SIZE macro, and compares them with the ctypes mirrors."""
    lines, want = [], []
    for cls in _mirrors():
        c = cls.__name__
        lines.append(f'printf("{c} %zu\\n", sizeof({c}));')
        want.append(f"{c} {ctypes.sizeof(cls)}")
        for name, *_ in cls._fields_:
            lines.append(f'printf("{c}.{name} %zu\\n", offsetof({c}, {name}));')
            want.append(f"{c}.{name} {getattr(cls, name).offset}")
        macro = "ATTN_" + c[len("attn_"):-len("_t")].upper() + "_STRUCT_SIZE"
        if cls._fields_[0][0] == "struct_size" and macro in structs.__all__:
            assert getattr(structs, macro) == ctypes.sizeof(cls), macro
            lines.append(f'printf("{macro} %zu\\n", (size_t){macro});')
            want.append(f"{macro} {ctypes.sizeof(cls)}")
    src = tmp_path / "probe.c"
    src.write_text("#include <stdio.h>\n#include <stddef.h>\n#include \"attn_c.h\"\n"
                   "int main(void) {\n" + "\n".join(lines) + "\nreturn 0;\n}\n")
    exe = tmp_path / "probe"
    subprocess.run(["cc", "-std=c99", "-Wall", "-Werror", "-I", os.path.join(ROOT, "include"),
                    str(src), "-o", str(exe)], check=True)
    got = subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split("\n")
    assert got[:-1] == want


def _header_version():
    with open(os.path.join(ROOT, "include", "attn_c.h"), encoding="utf-8") as f:
        text = f.read()
    return tuple(int(re.search(r"#define ATTN_VERSION_%s (\d+)" % part, text).group(1))
                 for part in ("MAJOR", "MINOR", "PATCH"))


def test_one_version_number_the_headers():
    """The package version, __version__ and the ABI the library is checked for are the
    header's ATTN_VERSION_MAJOR.MINOR.PATCH."""
    major, minor, patch = _header_version()
    assert libattn.ABI_VERSION == (major, minor)
    assert libattn.__version__ == f"{major}.{minor}.{patch}"
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        assert f'\nversion = "{major}.{minor}.{patch}"\n' in f.read()


def test_generated_module_matches_the_header(tmp_path):
    """libattn/_generated.py is what scripts/gen_bindings.py makes of include/attn_c.h today
    (after a header change: scripts/gen_bindings.sh, and commit)."""
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen_bindings.py"),
                    "--root", ROOT, "--out", str(tmp_path), "python"], check=True)
    rel = os.path.join("bindings", "python", "libattn", "_generated.py")
    with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
        committed = f.read()
    assert (tmp_path / rel).read_text(encoding="utf-8") == committed, \
        "libattn/_generated.py drifted from include/attn_c.h: run scripts/gen_bindings.sh"


def test_every_function_of_the_header_has_a_signature():
    with open(os.path.join(ROOT, "include", "attn_c.h"), encoding="utf-8") as f:
        declared = set(re.findall(r"ATTN_API [^;(]*?\b(attn_\w+)\s*\(", f.read()))
    assert set(SIGNATURES) | set(OPTIONAL_SIGNATURES) == declared


def test_every_enum_of_the_header_is_exported_at_the_top():
    """`libattn.<Enum>` for every C enumeration (the generated list), in __all__, the same
    class as libattn.enums'; a new enum of attn_c.h needs no edit of __init__.py."""
    from libattn import _generated
    assert _generated.ENUMS, "the generator found no enum"
    for name in _generated.ENUMS:
        assert getattr(libattn, name) is getattr(libattn.enums, name), name
        assert name in libattn.__all__, name
    assert len(libattn.__all__) == len(set(libattn.__all__))
    assert libattn.FlashinferDecodeKernel.TRTLLM_GEN == 1
    assert libattn.KvCacheLayout.HND == 1
