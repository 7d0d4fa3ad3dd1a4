"""The only changes made to vLLM for the lane: each replaces something that does not compute
metadata (a model-layer lookup, a device query, a kernel launch the CPU build of the wheel
lacks) and is applied only around the call that needs it. Each is a small named function; the
docs (docs/conformance.md) list them.
"""
from __future__ import annotations

import contextlib
import math
from typing import Any, Iterator, List

NUM_HEADS, HEAD_SIZE = 32, 128


#: the lane's default layer as PerLayerParameters' fields (window_left, logits_soft_cap,
#: sm_scale, has_sinks): full attention, no soft cap, 1/sqrt(head_size), no sinks
DEFAULT_LAYER = (-1, None, 1.0 / math.sqrt(HEAD_SIZE), False)


def per_layer_parameters_without_model(vllm_config: Any, layer_names: List[str],
                                       cls_: Any) -> dict:
    """Replaces vllm.v1.attention.backends.utils.get_per_layer_parameters for FLASHINFER: vLLM
    reads each layer's window, soft cap and scale from the model's instantiated Attention
    layers, which a weightless config never creates. The lane's layers are full attention, no
    soft cap, scale 1/sqrt(head_size), no sinks: what libattn's PerLayerParams default to."""
    from vllm.v1.attention.backends.utils import PerLayerParameters
    return {name: PerLayerParameters(*DEFAULT_LAYER) for name in layer_names}


# FlashInfer's planner wrappers (FLASHINFER): conformance/flashinfer_plans.py (PlanRecorder)


def flashinfer_workspace_placeholder(self: Any) -> Any:
    """Replaces FlashInferMetadataBuilder._get_workspace_buffer: FlashInfer's scratch memory,
    handed to its wrappers' constructors and never read by vLLM's metadata. vLLM sizes it
    max_num_batched_tokens x heads x head_size x 16 bytes and zero-fills it (4 GiB at the
    lane's config, about 5 s for every FLASHINFER builder the lane constructs); the lane's
    wrappers are recorders (flashinfer_plans.PlanRecorder), which need none."""
    import torch
    return torch.empty(0, dtype=torch.uint8)


#: the arguments of the last cpu_attn_get_scheduler_metadata call (see below)
CPU_SCHEDULER_ARGS: dict = {}


def cpu_attn_scheduler_metadata_placeholder(**kwargs: Any) -> Any:
    """Replaces vllm._custom_ops.cpu_attn_get_scheduler_metadata for CPU_ATTN: a C++ op of
    vLLM's CPU wheel (torch.ops._C.get_scheduler_metadata) that PyPI's CUDA wheel lacks. It
    returns an opaque work-partition tensor for vLLM's own CPU kernel, so `scheduler_metadata`
    is not compared (listed as not comparable); the arguments vLLM passes it are recorded and
    compared with libattn's scheduler_* fields (the same op's inputs, which libattn hands the
    runtime instead of calling the op)."""
    import torch
    CPU_SCHEDULER_ARGS.clear()
    CPU_SCHEDULER_ARGS.update(kwargs)
    return torch.empty(0, dtype=torch.int32)


#: the keyword arguments of the last get_scheduler_metadata call (FLASH_ATTN on FA3, see below)
FA3_SCHEDULER_ARGS: dict = {}


def fa3_scheduler_recorder(**kwargs: Any) -> Any:
    """Replaces FlashAttention's get_scheduler_metadata as flash_attn.py imports it (FLASH_ATTN
    on FA3): FlashAttention's own CUDA op (vllm_flash_attn), absent from a CPU install
    (flash_attn.py does not even import it there). The arguments vLLM passes are recorded and
    compared with libattn's scheduler_* fields (libattn returns the call's inputs); the
    schedule itself is FlashAttention's output, so an empty int32 tensor stands in for it and
    `scheduler_metadata` is not compared while the recorder was called."""
    import torch
    FA3_SCHEDULER_ARGS.clear()
    FA3_SCHEDULER_ARGS.update(kwargs)
    return torch.empty(0, dtype=torch.int32)


def flash_attn_version(version: int) -> Any:
    """Replaces get_flash_attn_version (FLASH_ATTN): which FlashAttention build is installed
    for the GPU (2 on Ampere, 3 on Hopper, 4 on Blackwell); the CPU install has none. Answers
    the version the lane's builder is made for."""
    return lambda *args, **kwargs: version


_FA_MODULES: dict = {}


def flash_attn_module(version: int) -> Any:
    """vllm/v1/attention/backends/flash_attn.py executed once more, as its own module, with
    get_flash_attn_version answering ``version`` (flash_attn_version above) while it runs and
    afterwards: vLLM decides FLASH_ATTN's class-level CUDA graph support when the module is
    imported (``_cudagraph_support = ALWAYS if get_flash_attn_version() in (3, 4) ...``), and
    FA3's AOT schedule when a builder is made, so a builder "on FA3" needs the module as it is
    imported on a Hopper GPU. vLLM's unmodified source; only the version query answers
    differently. One module per version, cached."""
    if version not in _FA_MODULES:
        import importlib
        import importlib.util
        import sys
        fu = importlib.import_module("vllm.v1.attention.backends.fa_utils")
        base = importlib.import_module("vllm.v1.attention.backends.flash_attn")
        name = f"{base.__name__}__lane_fa{version}"
        spec = importlib.util.spec_from_file_location(name, base.__file__)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # dataclasses resolve their module by name
        real = fu.get_flash_attn_version
        fu.get_flash_attn_version = flash_attn_version(version)
        try:
            spec.loader.exec_module(mod)
        finally:
            fu.get_flash_attn_version = real
        _FA_MODULES[version] = mod
    return _FA_MODULES[version]


def dcp_group_query(world: int, rank: int) -> Any:
    """Replaces vllm.distributed.parallel_state.get_dcp_world_size_and_rank, as the builder
    modules imported it (FLASH_ATTN, FLASHINFER), for DCP builders: without a distributed
    init there is no DCP group and vLLM answers (1, 0); this answers the DCP world and rank
    the lane's config describes (parallel_config.decode_context_parallel_size), and (1, 0) for
    a cache that is not DCP-sharded, as vLLM does. Only the group query is replaced."""
    def get_dcp_world_size_and_rank(enabled: bool = True) -> tuple:
        return (world, rank) if enabled else (1, 0)
    return get_dcp_world_size_and_rank


#: the builder modules that ask the DCP group for their world and rank
DCP_MODULES = {"FLASH_ATTN": "vllm.v1.attention.backends.flash_attn",
               "FLASHINFER": "vllm.v1.attention.backends.flashinfer"}


def device_capability(cap: Any) -> Any:
    """Replaces the platform's get_device_capability (FLASHINFER): vLLM's CPU platform has no
    device and answers None; this answers the capability the lane's builder is for (a
    DeviceCapability, or None as the CPU platform does), so that vLLM's own decisions (XQA on
    9.0/12.x, trtllm-gen on 10.x, fa2-native decode below 9.0, the 10.x KV cache layouts) run
    as on that GPU. Only the query is replaced; vLLM's has_/is_device_capability(_family)
    read it."""
    from vllm.platforms.interface import DeviceCapability
    value = None if cap is None else DeviceCapability(*cap)
    return classmethod(lambda cls, device_id=0: value)


_INHERITED = object()


def sliding_window_configs(window: int) -> Any:
    """Replaces flash_attn._get_sliding_window_configs (FLASH_ATTN, the layer-variant items):
    vLLM collects impl.sliding_window of the model's instantiated Attention layers, which a
    weightless config never creates. Answers the one window of the lane's layer as
    FlashAttentionImpl sets it for a decoder layer of sliding_window ``window``:
    (window - 1, 0)."""
    return lambda vllm_config: {(window - 1, 0)}


def per_layer_parameters_of(layers: tuple) -> Any:
    """get_per_layer_parameters (FLASHINFER) answering the lane's layers: (window_left,
    logits_soft_cap, sm_scale, has_sinks) each, as FlashInferImpl derives them from a layer
    (window_left = window - 1); the builder's layer names get the first, and the group's other
    layers (the layer-variant item's second layer) follow under names of their own."""
    def get(vllm_config: Any, layer_names: List[str], cls_: Any) -> dict:
        from vllm.v1.attention.backends.utils import PerLayerParameters
        out = {n: PerLayerParameters(*layers[0]) for n in layer_names}
        for i, p in enumerate(layers[1:]):
            out[f"model.layers.{1000 + i}.self_attn.attn"] = PerLayerParameters(*p)
        return out
    return get


@contextlib.contextmanager
def patched(backend: str, dcp: tuple = (1, 0), capability: Any = None,
            fa_version: int = 0, window: int = 0, sm120_sms: int = 0,
            layers: tuple = ()) -> Iterator[None]:
    """The patches a backend's construction and build() need, applied for the duration;
    ``dcp`` the (world, rank) of a DCP builder, ``capability`` the (major, minor) a FLASHINFER
    builder is for (None: the CPU platform's own answer), ``fa_version`` the FlashAttention
    version a FLASH_ATTN builder is for (0: vLLM's own answer), ``window`` the sliding window
    of the lane's layer (0: full attention), ``sm120_sms`` the SM count of a compute capability
    12.0 GPU a TRITON_ATTN builder is for (0: the CPU platform), ``layers`` the group's layer
    parameters a FLASHINFER builder reads (layer_variant_items.layer_params; empty: the default
    layer with ``window``)."""
    undo = []

    def put(obj: Any, name: str, value: Any) -> None:
        # a class's own attribute is restored as it was (a classmethod stays one); an
        # inherited one is deleted again
        own = vars(obj).get(name, _INHERITED) if isinstance(obj, type) else \
            getattr(obj, name, _INHERITED)  # a module attribute that is absent: deleted again
        undo.append((obj, name, own))
        setattr(obj, name, value)
    try:
        if backend == "FLASHINFER":
            import vllm.v1.attention.backends.flashinfer as fi
            from .flashinfer_plans import RECORDERS
            windowed = ((window - 1,) + DEFAULT_LAYER[1:],)
            put(fi, "get_per_layer_parameters", per_layer_parameters_of(layers or windowed)
                if layers or window else per_layer_parameters_without_model)
            put(fi.FlashInferMetadataBuilder, "_get_workspace_buffer",
                flashinfer_workspace_placeholder)
            from vllm.platforms import current_platform
            from vllm.utils.flashinfer import supports_trtllm_attention
            put(type(current_platform), "get_device_capability", device_capability(capability))
            # vLLM caches this answer per process (functools.cache): recomputed per capability
            supports_trtllm_attention.cache_clear()
            undo.append((None, "supports_trtllm_attention.cache_clear", supports_trtllm_attention))
            for name, recorder in RECORDERS.items():
                put(fi, name, recorder)
        if backend == "FLASH_ATTN" and fa_version:
            put(flash_attn_module(fa_version), "get_scheduler_metadata", fa3_scheduler_recorder)
            FA3_SCHEDULER_ARGS.clear()
        if backend == "FLASH_ATTN" and window:
            import importlib
            module = flash_attn_module(fa_version) if fa_version \
                else importlib.import_module(DCP_MODULES[backend])
            put(module, "_get_sliding_window_configs", sliding_window_configs(window))
        if dcp[0] > 1 and backend in DCP_MODULES:
            import importlib
            module = flash_attn_module(fa_version) if backend == "FLASH_ATTN" and fa_version \
                else importlib.import_module(DCP_MODULES[backend])
            put(module, "get_dcp_world_size_and_rank", dcp_group_query(*dcp))
        if backend == "TRITON_ATTN" and sm120_sms:
            import vllm.v1.attention.backends.triton_attn as triton_attn
            put(triton_attn, "current_platform", Sm120Platform(triton_attn.current_platform,
                                                               sm120_sms))
        if backend == "CPU_ATTN":
            import vllm._custom_ops as ops
            put(ops, "cpu_attn_get_scheduler_metadata", cpu_attn_scheduler_metadata_placeholder)
            CPU_SCHEDULER_ARGS.clear()
        yield
    finally:
        for obj, name, value in reversed(undo):
            if obj is None:  # a cache to clear, not an attribute to restore
                value.cache_clear()
            elif value is _INHERITED:
                delattr(obj, name)
            else:
                setattr(obj, name, value)


class Sm120Platform:
    """vLLM's current platform as TritonAttentionMetadataBuilder asks it on a compute capability
    12.0 GPU with ``sms`` SMs (CUDA, 12.0, the SM count); every other question goes to the
    platform it wraps."""

    def __init__(self, platform: Any, sms: int) -> None:
        self._platform, self._sms = platform, sms

    def is_cuda(self) -> bool:
        return True

    def is_device_capability(self, capability: Any, device_id: int = 0) -> bool:
        return tuple(capability) == (12, 0) if not isinstance(capability, int) \
            else capability == 120

    def num_compute_units(self, device_id: int = 0) -> int:
        return self._sms

    def __getattr__(self, name: str) -> Any:
        return getattr(self._platform, name)


#: fields left out of the comparison, each named with its reason in the table's notes: fields a
#: patch makes meaningless on vLLM's side, and Python objects a C library cannot represent
NOT_COMPARABLE = {
    "CPU_ATTN": {"scheduler_metadata": "output of the patched-out vLLM CPU op"},
    "FLEX_ATTENTION": {
        "score_mod": "a Python callable (torch.compile'd score modifier); None after build()",
        "logical_mask_mod": "a Python callable (causal/bidirectional mask_mod); libattn's "
                            "`causal` and `uses_paged_kv` select the same one",
        "transformed_score_mod": "a Python callable; None after build()",
        "block_mask.mask_mod": "a Python callable inside torch's BlockMask",
    },
}


# ---- KIMI_K3_KDA (conformance/kda_items.py): two Triton kernels and a layer lookup ------------

def kda_aligned_state_indices(block_table: Any, seq_lens: Any, kv_cache_spec: Any,
                              mamba_cache_mode: str) -> Any:
    """Replaces kda_metadata._mamba_get_block_table_tensor ("align" mode on model runner V1), a
    Triton kernel that asserts CUDA tensors, by the PyTorch equivalent its source gives beside
    it: columns max((seq_len - 1) // block_size, 0) + [0, num_speculative_blocks] gathered."""
    import torch
    if mamba_cache_mode == "none":
        return block_table
    start = ((seq_lens - 1) // kv_cache_spec.block_size).clamp_(min=0)
    offsets = torch.arange(1 + kv_cache_spec.num_speculative_blocks, dtype=torch.int32)
    return torch.gather(block_table, 1, (start[:, None] + offsets).to(torch.int64))


def kda_stage_spec_decode(state_indices: Any, query_start_loc: Any, num_accepted_tokens: Any,
                          staged_state_indices: Any, staged_query_start_loc: Any,
                          staged_num_accepted_tokens: Any, *, num_spec_decodes: int) -> None:
    """Replaces kda_metadata.stage_spec_decode_metadata (a Triton kernel that asserts CUDA
    tensors) by the PyTorch staging its source gives, reading the staged buffer's columns
    through the source's strides as the kernel's pointer arithmetic does (as_strided: past the
    source's storage it raises, where the kernel would read out of bounds)."""
    n = num_spec_decodes
    slots = staged_state_indices.shape[1]
    src = state_indices.as_strided((n, slots), (state_indices.stride(0), state_indices.stride(1)),
                                   state_indices.storage_offset())
    staged_state_indices[:n].copy_(src)
    staged_state_indices[n:].fill_(0)  # NULL_BLOCK_ID
    staged_query_start_loc[:n + 1].copy_(query_start_loc[:n + 1])
    staged_query_start_loc[n + 1:].fill_(int(query_start_loc[n]))
    staged_num_accepted_tokens[:n].copy_(num_accepted_tokens[:n])
    staged_num_accepted_tokens[n:].fill_(1)


#: what kda_recoverssm_context returns: the metadata's recoverssm_context (compare=False)
KDA_RECOVERSSM_CONTEXT = "KDARecoverSSMCommitContext placeholder"


def kda_recoverssm_context(self: Any) -> Any:
    """Replaces KimiK3KDAMetadataBuilder._get_recoverssm_context: it looks the KDA layers up in
    the compilation config's static_forward_context (a loaded model) to build a handle on their
    RecoverSSM commit kernels; the handle is no metadata (a compare=False field)."""
    return KDA_RECOVERSSM_CONTEXT
