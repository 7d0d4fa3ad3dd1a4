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
  level is ALWAYS; uniform ones on FA2); block sizes 16 to 1024; k up to 9.
- FLASHINFER (SM 10.0 variants): the padded-decode item's builders and batches
  (flashinfer_padded_items._adjust: max_num_seqs 4 to 64, all-decode batches padded past their
  requests, builders kept across the batches of a setting, so the rows a padded batch plans past
  its requests are earlier builds' leftovers) on compute capability 10.0 only, no DCP:
  FlashInfer-native decode (fast_plan_decode; TRT-LLM off) in three builders of four with blocks
  of 16 to 64, trtllm-gen (TRT-LLM auto) otherwise and with every block size up to 1024 (vLLM's
  10.x kernel sizes for GQA); the drawn cache dtype (auto, fp8, fp8_e5m2); a sliding window in
  half the builders (window_left = window - 1 in the stand-in per-layer parameters, libattn's
  SLIDING_WINDOW spec); full CUDA graphs in half, with capture builds on a third of their
  uniform batches; k up to 9.

Not generated here: sinks and soft caps (they need per-layer parameters on libattn's side,
which the lane's builders do not pass), head sizes other than 128.
"""
from __future__ import annotations

import dataclasses
from typing import Any, List

import numpy as np

from .batches import BLOCK_SIZES, Batch
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
    if b.n == 0 or level == "NEVER" or choice_rng(b, 43).random() >= 1 / 3:
        return False
    if level == "ALWAYS":
        return True
    q = b.q[b.q > 0]
    if level == "UNIFORM_SINGLE_TOKEN_DECODE":
        return q.size > 0 and bool((q == 1).all())
    return q.size > 0 and bool((q == q[0]).all())


def _fa_adjust(b: Batch) -> Batch:
    g = _group_rng(b, 80)
    b.layer = LayerVariant(window=int(g.choice(FA_WINDOWS)), full=bool(g.random() < 0.5),
                           non_causal=True)
    return b


def _fi_adjust(b: Batch) -> Batch:
    from .flashinfer_padded_items import _adjust
    b = _adjust(b)  # max_num_seqs, the padding, the request count, the cache dtype
    g = _group_rng(b, 81)
    b.dcp, b.interleave = 1, 1
    native = b.block_size <= 64 and g.random() < 0.75
    b.fi_settings = ((10, 0), b.fi_settings[1], False if native else None)
    b.layer = LayerVariant(window=int(g.choice(FI_WINDOWS)), full=bool(g.random() < 0.5))
    return b


def _variant_path(base: Any) -> Any:
    """The base item's path plus the variant: window or full, causal, capture or build."""
    def path(ctx: Any, b: Batch, v: Any) -> str:
        from .builder_items import capture as is_capture
        layer = b.layer
        causal = getattr(v, "causal", True)
        kind = "tensor" if not isinstance(causal, bool) else str(causal).lower()
        p = base(ctx, b, v) if base else ""
        backend = "FLASHINFER" if getattr(b, "fi_settings", None) else "FLASH_ATTN"
        wrapper = getattr(getattr(v, "decode", None), "wrapper", None)
        fast = ", fast_decode_plan" if getattr(wrapper, "fast_planned", False) else ""
        return (f"{p}{fast}, {'window' if layer.window else 'no window'}"
                f"{', full graphs' if layer.full else ''}, causal={kind}, "
                f"{'capture' if is_capture(ctx, backend, '', b) else 'build'}")
    return path


def layer_variant_items() -> List[Item]:
    from .builder_items import builder_item
    from .flashinfer_padded_items import _path
    fa = builder_item("FLASH_ATTN")
    fi = builder_item("FLASHINFER")
    return [
        dataclasses.replace(fa, name="FLASH_ATTN (layer variants)", adjust=_fa_adjust,
                            path=_variant_path(fa.path), max_spec=MAX_SPEC,
                            block_sizes=BLOCK_SIZES * 3 + LARGE),
        dataclasses.replace(fi, name="FLASHINFER (SM 10.0 variants)", adjust=_fi_adjust,
                            path=_variant_path(_path(fi.path)), max_spec=MAX_SPEC,
                            block_sizes=BLOCK_SIZES * 3 + LARGE,
                            kinds=("decode", "decode", "decode", "padded", "padded", "mixed",
                                   "spec")),
    ]
