"""Layer variants (issue 34): the FLASH_ATTN and FLASHINFER builder items (builder_items.
builder_item: the same builders, batches, comparison and class answers) on the layers the base
items never make, drawn per builder (the batches a builder serves in a row: the runner sorts an
item's batches by block size, speculative tokens and chunk) as a ``LayerVariant`` on the batch
(Item.adjust; batches.ITEM_ATTRS keeps it when a batch is shrunk):

- FLASH_ATTN (layer variants): a sliding window (8 to 32,768 tokens: smaller and larger than
  the batches' contexts; full attention in one builder of six), vLLM's SlidingWindowSpec and
  libattn's SLIDING_WINDOW spec, vLLM's `_get_sliding_window_configs` answering the layer's
  (window - 1, 0) (patches.sliding_window_configs: the model's layers are never made); the
  FlashAttention version drawn as the FLASH_ATTN item draws it (2, 3: FA3's AOT scheduler, whose
  arguments are compared, 4) and DCP as there; `causal` False, a per-request int32 tensor or True
  in a third of the batches each (FA3 symmetrizes the window of a non-causal schedule); full
  CUDA graphs (FULL_AND_PIECEWISE, capture size 512) in half the builders, and on a third of
  their batches `build_for_cudagraph_capture` in place of `build` (any batch on FA3/FA4, whose
  level is ALWAYS; uniform ones on FA2); block sizes 16 to 1024; k up to 9; the KV cache dtype
  (FA_CACHE_DTYPES: vLLM's cache_config.cache_dtype and a per-tensor fp8 spec, libattn's
  config->cache_dtype): fp8 and fp8_e4m3 on FA3 and FA4 builders (FA3's schedule runs in
  fp8_e4m3), fp8_e5m2 on any, refused by both (vLLM's backend selection:
  FlashAttentionBackend.supported_kv_cache_dtypes lacks it); the model's head size (64 to 512:
  FA3's schedule's headdim; over 256 only on FlashAttention 4, refused by both elsewhere, as
  vLLM's supports_head_size) and KV heads (1 to 32: num_heads_kv), a model config of that shape
  on vLLM's side and the same KvCacheSpec on libattn's.
- FLASHINFER (SM 10.0 variants): the padded-decode item's builders and batches
  (flashinfer_padded_items._adjust: max_num_seqs 4 to 64, all-decode batches padded past their
  requests, builders kept across the batches of a setting, so the rows a padded batch plans past
  its requests are earlier builds' leftovers) on compute capability 10.0 only, no DCP:
  FlashInfer-native decode (fast_plan_decode; TRT-LLM off) in three builders of four with blocks
  of 16 to 64, trtllm-gen (TRT-LLM auto) otherwise and with every block size up to 1024 (vLLM's
  10.x kernel sizes for GQA); the drawn cache dtype (auto, fp8, fp8_e5m2); a sliding window in
  half the builders (window_left = window - 1 in the stand-in per-layer parameters, libattn's
  SLIDING_WINDOW spec); a logits soft cap (30 or 50) in a third and attention sinks in a
  quarter of the builders, and in a quarter a second layer in the group (the same parameters,
  or one of them different: vLLM refuses such a group's builds unless TRT-LLM serves every
  part), given to vLLM's builder by the stand-in get_per_layer_parameters and to libattn's as
  BuilderConfig.layers (layer_params); full CUDA graphs in half, with capture builds on a third
  of their uniform batches; k up to 9.
- TRITON_ATTN (layer variants): what vLLM's TritonAttentionMetadataBuilder reads beyond the
  batch: the model's head size (64 to 512: softmax_segm_output's last dimension, the next power
  of two) and KV heads (1 to 32: seq_threshold_3D = 128 // KV heads), a model config of that
  shape on vLLM's side (VllmConfigs.shaped_model) and the same KvCacheSpec on libattn's; full
  CUDA graphs in half the builders, each with its own capture-size list (vLLM's default shape up
  to 8, 64 or 512, or a random set, so that ties between equally close sizes occur), which
  moves seq_threshold_3D and the scratch rows, and `build_for_cudagraph_capture` (seq_lens set
  to 1) on a third of their batches (level ALWAYS: any batch); compute capability 12.0 with an
  SM count in a third (patches: the triton_attn module's current_platform answers CUDA, 12.0 and
  the count), where 64 softmax segments replace 16 for batches that under-fill the SMs; a
  sliding window in half (vLLM's builder does not read it: the SLIDING_WINDOW spec is built
  alike); `causal` False, a per-request tensor or True a third each; blocks 16 to 1024; k up
  to 9.

- FLEX_ATTENTION (layer variants): a sliding window (the FLASH_ATTN item's windows, full
  attention in one builder of six; vLLM's SlidingWindowSpec, libattn's SLIDING_WINDOW spec),
  which vLLM's builder reads only under full CUDA graphs (the metadata's `sliding_window`, the
  direct block mask's pruned pages); full CUDA graphs (FULL_AND_PIECEWISE) in half the
  builders, with `build_for_cudagraph_capture` (max_seq_len from seq_lens_cpu_upper_bound) on
  a third of their batches (level ALWAYS: any batch); `causal` False in a third of the batches
  (FLEX keeps no per-request causal tensor); blocks 16 to 1024 (kv_block_size = block_size:
  the direct build); k up to 9. The model's head size is not drawn: the builder stores it and
  reads it nowhere.

Not generated here: sinks and soft caps on FLASH_ATTN, TRITON_ATTN and FLEX_ATTENTION (their
builders read neither).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, List

import numpy as np

from .batches import BLOCK_SIZES, CAPTURE_SIZES, VARIANT_KINDS, Batch
from .item import Item, choice_rng

#: the windows a FLASH_ATTN builder's layer is drawn with (0: full attention)
FA_WINDOWS = (0, 8, 64, 512, 4096, 32768)
#: FLASHINFER's (full attention in half the builders)
FI_WINDOWS = (0, 0, 0, 64, 512, 4096)
#: block sizes: the base items' three, and the large ones FLASH_ATTN (a multiple of 16) and
#: FlashInfer's 10.x trtllm-gen path accept
LARGE = (128, 256, 512, 1024)
MAX_SPEC = 9
#: compilation_config.max_cudagraph_capture_size of a full-graph builder
MAX_CAPTURE = 512


@dataclasses.dataclass(frozen=True)
class LayerVariant:
    """What a layer-variant builder is made for (part of the builder cache's key)."""
    window: int = 0  #: the layer's sliding window (0: full attention)
    full: bool = False  #: full CUDA graphs (FULL_AND_PIECEWISE)
    non_causal: bool = False  #: causal False / a tensor / True a third each (builder_items)
    max_capture: int = MAX_CAPTURE
    head_size: int = 128  #: the model's head size (and the KV cache spec's)
    kv_heads: int = 8  #: the model's KV heads (and the KV cache spec's)
    capture_sizes: tuple = ()  #: compilation_config.cudagraph_capture_sizes (): vLLM's default
    sm120_sms: int = 0  #: compute capability 12.0 with this many SMs (0: the CPU platform)
    soft_cap: float = 0.0  #: the layer's logits soft cap (0: None)
    sinks: bool = False  #: the layer has attention sinks
    #: the group's other layers, (window_left, logits_soft_cap or None, sm_scale, has_sinks)
    #: each: FLASHINFER's builder infers its global parameters over every layer of its group
    other_layers: tuple = ()
    #: FLASH_ATTN's KV cache dtype (vLLM's cache_config.cache_dtype; FA_CACHE_DTYPES)
    cache_dtype: str = "auto"


def _group_rng(b: Batch, salt: int) -> np.random.Generator:
    """Seeded by what the runner groups a builder item's batches by, so that a builder serves
    many batches in a row."""
    return np.random.default_rng([*b.seed[:2], b.block_size, b.spec, b.chunk, salt])


def capture_batch(level: str, b: Batch) -> bool:
    """A third of a full-graph builder's non-empty batches are capture builds. libattn refuses
    the batches a builder's level does not allow, which vLLM's build_for_cudagraph_capture does
    not check (docs/cuda_graphs.md, "Levels"), so only those the level (vLLM's builder class's
    get_cudagraph_support, which the item compares with libattn's) allows go there: ALWAYS any
    batch, UNIFORM_BATCH uniform ones (every non-zero query one length; zero-length rows are
    padding), UNIFORM_SINGLE_TOKEN_DECODE single-token decodes, NEVER none (an intended
    difference: docs/conformance.md)."""
    if b.n == 0 or level == "NEVER":
        return False
    # vLLM's runner's own capture batches (batches.dummy_batch) are captured; a third of the
    # others
    if b.kind != "dummy" and choice_rng(b, 43).random() >= 1 / 3:
        return False
    if level == "ALWAYS":
        return True
    q = b.q[b.q > 0]
    if level == "UNIFORM_SINGLE_TOKEN_DECODE":
        return q.size > 0 and bool((q == 1).all())
    return q.size > 0 and bool((q == q[0]).all())


#: FLASH_ATTN's drawn KV cache dtypes (vLLM's cache_config.cache_dtype): bf16 in half the
#: builders, fp8 (e4m3: FA3's AOT schedule runs in fp8_e4m3) and fp8_e5m2 (which vLLM's
#: FlashAttentionBackend.supported_kv_cache_dtypes lacks: its backend selection refuses it, and
#: libattn's FLASH_ATTN refuses it at create)
FA_CACHE_DTYPES = ("auto", "auto", "auto", "fp8", "fp8_e4m3", "fp8_e5m2")
#: libattn's BuilderConfig.cache_dtype of each (ATTN_KV_DTYPE_*)
LIB_CACHE_DTYPES = {"auto": 0, "fp8": 4, "fp8_e4m3": 4, "fp8_e5m2": 5}


#: FLASH_ATTN's drawn model shapes (32 query heads): head sizes to 512 (vLLM's
#: supports_head_size: up to 256, 512 on FlashAttention 4; refused by both elsewhere)
FA_HEAD_SIZES = (64, 80, 96, 128, 128, 192, 256, 512)
FA_KV_HEADS = (1, 2, 4, 8, 8, 16, 32)


def _fa_adjust(b: Batch) -> Batch:
    from .builder_items import _fa_version
    g = _group_rng(b, 80)
    window, full = int(g.choice(FA_WINDOWS)), bool(g.random() < 0.5)
    # from their own generator, so that the draws above stay those of before
    dtype = str(_group_rng(b, 85).choice(FA_CACHE_DTYPES))
    if dtype in ("fp8", "fp8_e4m3") and _fa_version("FLASH_ATTN", "", b) == 2:
        # vLLM's backend selection takes an fp8 cache on FA3 (SM 9.0) and FA4 only
        # (flash_attn_supports_kv_cache_dtype); libattn builds FA2 with one (the metadata does
        # not depend on it there): not generated, docs/conformance.md
        dtype = "auto"
    shape = _group_rng(b, 87)
    # full graphs: vLLM's default capture sizes given to both sides, as vLLM's config post-init
    # fills them in (its engine then rounds them for spec decode, as libattn does)
    b.layer = LayerVariant(window=window, full=full, non_causal=True, cache_dtype=dtype,
                           capture_sizes=CAPTURE_SIZES if full else (),
                           head_size=int(shape.choice(FA_HEAD_SIZES)),
                           kv_heads=int(shape.choice(FA_KV_HEADS)))
    return b


#: FLASHINFER's drawn soft caps (0: none, in two builders of three)
FI_SOFT_CAPS = (0.0, 0.0, 0.0, 0.0, 30.0, 50.0)


def layer_params(layer: LayerVariant) -> tuple:
    """The group's layers as vLLM's PerLayerParameters fields, (window_left, logits_soft_cap or
    None, sm_scale, has_sinks) each: the variant's layer (window - 1, its cap and sinks, scale
    1/sqrt(head_size)) first, then ``other_layers``."""
    first = (layer.window - 1 if layer.window else -1, layer.soft_cap or None,
             1.0 / math.sqrt(layer.head_size), layer.sinks)
    return (first,) + tuple(layer.other_layers)


def _other_layers(g: np.random.Generator, first: tuple) -> tuple:
    """A second layer in one builder of four: the same as ``first`` (layer_params' tuple), or
    differing in one of window_left, logits_soft_cap, sm_scale, has_sinks (vLLM refuses a
    non-TRT-LLM build then: "Window left is not the same for all layers", or its
    same-parameters assertion)."""
    if g.random() >= 0.25:
        return ()
    p = list(first)
    which = int(g.integers(0, 5))  # 4: the same layer again
    if which == 0:
        p[0] = 511 if p[0] != 511 else -1
    elif which == 1:
        p[1] = None if p[1] else 30.0
    elif which == 2:
        p[2] = 0.125 if p[2] != 0.125 else 0.1
    elif which == 3:
        p[3] = not p[3]
    return (tuple(p),)


def _fi_adjust(b: Batch) -> Batch:
    from .flashinfer_padded_items import _adjust
    b = _adjust(b)  # max_num_seqs, the padding, the request count, the cache dtype
    g = _group_rng(b, 81)
    b.dcp, b.interleave = 1, 1
    native = b.block_size <= 64 and g.random() < 0.75
    b.fi_settings = ((10, 0), b.fi_settings[1], False if native else None)
    window, full = int(g.choice(FI_WINDOWS)), bool(g.random() < 0.5)
    # drawn from their own generator, so that the draws above stay those of before
    h = _group_rng(b, 83)
    layer = LayerVariant(window=window, full=full, soft_cap=float(h.choice(FI_SOFT_CAPS)),
                         sinks=bool(h.random() < 0.25))
    b.layer = dataclasses.replace(layer, other_layers=_other_layers(h, layer_params(layer)[0]))
    return b


def _fi_layers_adjust(b: Batch) -> Batch:
    """FLASHINFER (layer variants): the base item's batches and settings (every capability,
    cache dtype and TRT-LLM switch flashinfer_settings draws, DCP) with the layer drawn per
    builder: a sliding window in half, a soft cap in a third, sinks in half, a second layer in
    a quarter (as _fi_adjust draws them); full CUDA graphs in half (drawn from a generator of
    their own: the draws above stay those of the item's first runs)."""
    g = _group_rng(b, 86)
    layer = LayerVariant(window=int(g.choice(FI_WINDOWS)), soft_cap=float(g.choice(FI_SOFT_CAPS)),
                         sinks=bool(g.random() < 0.5))
    b.layer = dataclasses.replace(layer, other_layers=_other_layers(g, layer_params(layer)[0]),
                                  full=bool(_group_rng(b, 89).random() < 0.5))
    return b


#: TRITON_ATTN's drawn model shapes (32 query heads: the KV heads divide them)
TRITON_HEAD_SIZES = (64, 80, 96, 128, 192, 256, 512)
TRITON_KV_HEADS = (1, 2, 4, 8, 16, 32)
#: SM counts of compute capability 12.0 parts (and small ones, whose 64-segment grid is short)
SM120_SMS = (20, 48, 84, 170, 188)


def _capture_sizes(g: np.random.Generator) -> tuple:
    """A full-graph builder's capture sizes: vLLM's default list shape (1, 2, 4, multiples of 8
    below 256, of 16 from 256) up to 8, 64 or 512, or a random set of 1 to 6 sizes up to 300."""
    if g.random() < 0.5:
        top = int(g.choice((8, 64, 512)))
        return tuple(s for s in [1, 2, 4] + list(range(8, 256, 8)) + list(range(256, 513, 16))
                     if s <= top)
    return tuple(sorted({int(x) for x in g.integers(1, 301, int(g.integers(1, 7)))}))


def _triton_adjust(b: Batch) -> Batch:
    g = _group_rng(b, 82)
    full = bool(g.random() < 0.5)
    sizes = _capture_sizes(g) if full else ()
    b.layer = LayerVariant(window=int(g.choice(FA_WINDOWS)), full=full, non_causal=True,
                           max_capture=max(sizes) if sizes else MAX_CAPTURE,
                           head_size=int(g.choice(TRITON_HEAD_SIZES)),
                           kv_heads=int(g.choice(TRITON_KV_HEADS)), capture_sizes=sizes,
                           sm120_sms=int(g.choice(SM120_SMS)) if g.random() < 1 / 3 else 0)
    return b


def _flex_adjust(b: Batch) -> Batch:
    g = _group_rng(b, 84)
    b.layer = LayerVariant(window=int(g.choice(FA_WINDOWS)), full=bool(g.random() < 0.5),
                           non_causal=True)
    return b


def _variant_path(base: Any, backend: str) -> Any:
    """The base item's path plus the variant: window or full, causal, capture or build (and
    TRITON_ATTN's model shape and platform)."""
    def path(ctx: Any, b: Batch, v: Any) -> str:
        from .builder_items import capture as is_capture
        layer = b.layer
        causal = getattr(v, "causal", True)
        kind = "tensor" if not isinstance(causal, bool) else str(causal).lower()
        p = base(ctx, b, v) if base else ""
        wrapper = getattr(getattr(v, "decode", None), "wrapper", None)
        fast = ", fast_decode_plan" if getattr(wrapper, "fast_planned", False) else ""
        if backend == "TRITON_ATTN":
            fast = f", {'SM 12.0' if layer.sm120_sms else 'no SM count'}"
        if backend == "FLASH_ATTN" and layer.cache_dtype != "auto":
            fast = f", {layer.cache_dtype}"
        if backend == "FLASH_ATTN" and layer.head_size > 256:
            fast += f", head size {layer.head_size}"
        if backend == "FLASHINFER":
            fast += (f"{', soft cap' if layer.soft_cap else ''}{', sinks' if layer.sinks else ''}"
                     f"{', 2 layers' if layer.other_layers else ''}")
        return (f"{p}{fast}, {'window' if layer.window else 'no window'}"
                f"{', full graphs' if layer.full else ''}, causal={kind}, "
                f"{'capture' if is_capture(ctx, backend, '', b) else 'build'}").lstrip(", ")
    return path


def layer_variant_items() -> List[Item]:
    from .builder_items import builder_item
    from .flashinfer_padded_items import _path
    fa = builder_item("FLASH_ATTN")
    fi = builder_item("FLASHINFER")
    tr = builder_item("TRITON_ATTN")
    fx = builder_item("FLEX_ATTENTION")
    return [
        dataclasses.replace(fa, name="FLASH_ATTN (layer variants)", adjust=_fa_adjust,
                            path=_variant_path(fa.path, "FLASH_ATTN"), max_spec=MAX_SPEC,
                            block_sizes=BLOCK_SIZES * 3 + LARGE, kinds=VARIANT_KINDS),
        dataclasses.replace(fi, name="FLASHINFER (SM 10.0 variants)", adjust=_fi_adjust,
                            path=_variant_path(_path(fi.path), "FLASHINFER"),
                            max_spec=MAX_SPEC, block_sizes=BLOCK_SIZES * 3 + LARGE,
                            kinds=("decode", "decode", "decode", "padded", "padded", "mixed",
                                   "spec", "dummy")),
        dataclasses.replace(fi, name="FLASHINFER (layer variants)", adjust=_fi_layers_adjust,
                            path=_variant_path(fi.path, "FLASHINFER"), kinds=VARIANT_KINDS),
        dataclasses.replace(tr, name="TRITON_ATTN (layer variants)", adjust=_triton_adjust,
                            path=_variant_path(tr.path, "TRITON_ATTN"), max_spec=MAX_SPEC,
                            block_sizes=BLOCK_SIZES * 3 + LARGE, kinds=VARIANT_KINDS),
        dataclasses.replace(fx, name="FLEX_ATTENTION (layer variants)", adjust=_flex_adjust,
                            path=_variant_path(fx.path, "FLEX_ATTENTION"), max_spec=MAX_SPEC,
                            block_sizes=BLOCK_SIZES * 3 + LARGE, kinds=VARIANT_KINDS),
    ]


#: the wrappers over FLASH_ATTN and TRITON_ATTN (builder_items' pseudo-wrappers included)
CAPTURE_WRAPPERS = ("ChunkedLocal", "FastPrefill", "Cross", "EncoderOnly", "StaticSink",
                    "DiffKV", "BlockPool")


def _full_graphs_adjust(b: Batch) -> Batch:
    """Full CUDA graphs (FULL_AND_PIECEWISE, vLLM's default capture sizes up to 512, which
    TRITON_ATTN's builder asserts it is given) in three builders of four (drawn per group of
    batches); nothing else of the layer changes."""
    full = bool(_group_rng(b, 88).random() < 0.75)
    b.layer = LayerVariant(full=full, capture_sizes=CAPTURE_SIZES if full else ())
    return b


def _wrapper_capture_path(backend: str, wrapper: str) -> Any:
    def path(ctx: Any, b: Batch, v: Any) -> str:
        from .builder_items import _item_batch, capture as is_capture
        b = _item_batch(wrapper, b)  # the batch the item built (StaticSink's is wider)
        graphs = "full graphs" if b.layer.full else "no graphs"
        return (f"{graphs}, "
                f"{'capture' if is_capture(ctx, backend, wrapper, b) else 'build'}")
    return path


def wrapper_capture_items() -> List[Item]:
    """The wrappers' capture builds (issue 34): each wrapper item over FLASH_ATTN and
    TRITON_ATTN again, with full CUDA graphs in three builders of four and
    build_for_cudagraph_capture on the batches capture_batch picks (vLLM's runner's dummy
    batches among them, one in eight); the builder's level (vLLM's class answer, compared) says
    which batches may be captured: none for NEVER (ChunkedLocal over TRITON_ATTN: an intended
    difference, docs/conformance.md)."""
    from .builder_items import builder_item
    items = []
    for backend in ("FLASH_ATTN", "TRITON_ATTN"):
        for wrapper in CAPTURE_WRAPPERS:
            base = builder_item(backend, wrapper)
            name = f"{backend}_DIFFKV" if wrapper == "DiffKV" else base.name
            items.append(dataclasses.replace(base, name=f"{name} (capture builds)",
                                             adjust=_full_graphs_adjust, kinds=VARIANT_KINDS,
                                             path=_wrapper_capture_path(backend, wrapper)))
    return items


def captures(vb: Any, vc: Any, b: Batch, patch: Any = None) -> bool:
    """Whether an item builds ``b`` with build_for_cudagraph_capture on both sides: the
    batches capture_batch picks (a third of those the level allows) by the level vLLM's builder
    class answers for ``vc`` (the items that do not draw full graphs themselves), asked under
    ``patch`` (a context manager: the item's platform stand-ins, which the level may read, as
    its compared class answers are) when given."""
    import contextlib
    from vllm.config import set_current_vllm_config
    with set_current_vllm_config(vc), (patch if patch is not None else contextlib.nullcontext()):
        level = type(vb).get_cudagraph_support(vc, vb.kv_cache_spec)
    return capture_batch(level.name, b)
