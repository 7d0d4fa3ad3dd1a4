"""vLLM's side, set up once per process (shared by the lane and the bench): the environment
variables that select vLLM's CPU platform, the import, the version pin, and real VllmConfig
objects for a weightless local model description.

Import this module before vllm: it sets VLLM_TARGET_DEVICE=cpu (vLLM's platform detection finds
no GPU here) and quiets torch's and vLLM's import-time logging.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import types
import warnings
from typing import Any, Dict, List, Optional, Tuple

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
os.environ.setdefault("VLLM_LOGGING_LEVEL", "ERROR")
os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
os.environ.setdefault("TORCH_LOGS", "-torch")  # torch's deprecation warnings at vLLM's import
logging.getLogger("torch").setLevel(logging.ERROR)
warnings.filterwarnings("ignore")

def enable_triton_interpreter() -> None:
    """vLLM's Triton kernels (FLASHINFER's build, BlockTable.compute_slot_mapping,
    compute_token_to_req_indices) run on the CPU in Triton's interpreter: TRITON_INTERPRET=1
    makes `kernel[grid](...)` execute the kernel's own Python body on CPU tensors, and an empty
    CUDA_VISIBLE_DEVICES makes vllm.triton_utils accept "no Triton driver" (its check treats it
    as a distributed worker) so that HAS_TRITON is True. Called by the lane (not the bench)
    before vllm and triton are imported; runs vLLM's code, unpatched."""
    os.environ.setdefault("TRITON_INTERPRET", "1")
    os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")


def assume_flashinfer_cubins() -> None:
    """VLLM_HAS_FLASHINFER_CUBIN=1: vLLM's has_nvidia_artifactory() (behind
    supports_trtllm_attention) then answers that FlashInfer's TRT-LLM kernels are installed
    instead of probing NVIDIA's artifactory over the network (this machine is offline: the
    probe fails and would disable TRT-LLM everywhere). It is what libattn assumes
    (docs/backends/flashinfer.md: "FlashInfer's kernels are assumed installed"); on the CPU
    platform's own capability (None) TRT-LLM stays off either way. A vLLM setting, not a
    patch."""
    os.environ.setdefault("VLLM_HAS_FLASHINFER_CUBIN", "1")


#: the vLLM release libattn is compared against (issue 16)
PINNED_VLLM = "0.33.0"


class WrongVllmVersion(RuntimeError):
    pass


def check_version(expected: str = PINNED_VLLM) -> str:
    """The installed vLLM's version; WrongVllmVersion (saying what is installed and how to get
    the pinned one) unless it is ``expected``. Reads the package metadata, no import."""
    import importlib.metadata as m
    try:
        got = m.version("vllm")
    except m.PackageNotFoundError:
        raise WrongVllmVersion(f"vLLM is not installed in this Python; the lane needs "
                               f"vllm=={expected} (scripts/vllm_venv.sh installs it)") from None
    if got != expected:
        raise WrongVllmVersion(f"installed vLLM is {got}, the lane compares against vLLM "
                               f"{expected}: pip install vllm=={expected} (or remove the venv and "
                               f"rerun scripts/conformance.sh)")
    return got


def vllm_env(torch_threads: int = 1) -> Dict[str, Any]:
    """Imports vLLM (CPU platform) and what the comparisons call. torch gets `torch_threads`
    intra-op threads (0: torch's default)."""
    import torch
    if torch_threads > 0:
        torch.set_num_threads(torch_threads)
    import vllm
    from vllm.v1.attention.backend import CommonAttentionMetadata
    from vllm.v1.attention.backends import utils as vutils
    return dict(torch=torch, vllm=vllm, CAM=CommonAttentionMetadata, utils=vutils)


def common_metadata(env: Dict[str, Any], *, query_start_loc: Any, seq_lens: Any, block_table: Any,
                    slot_mapping: Any, num_reqs: int, num_actual_tokens: int, max_query_len: int,
                    max_seq_len: int, query_start_loc_cpu: Any = None, seq_lens_cpu: Any = None,
                    **extra: Any) -> Any:
    """vLLM's CommonAttentionMetadata over numpy arrays (torch.from_numpy: the same memory);
    ``extra`` are further keyword arguments (numpy arrays become tensors)."""
    t = env["torch"].from_numpy
    conv = {k: (t(v) if hasattr(v, "dtype") and hasattr(v, "shape") and not
                k.endswith("encoder_seq_lens_cpu") and k != "req_idx" else v)
            for k, v in extra.items()}
    return env["CAM"](query_start_loc=t(query_start_loc),
                      query_start_loc_cpu=t(query_start_loc if query_start_loc_cpu is None
                                            else query_start_loc_cpu),
                      seq_lens=t(seq_lens), num_reqs=num_reqs, num_actual_tokens=num_actual_tokens,
                      max_query_len=max_query_len, max_seq_len=max_seq_len,
                      block_table_tensor=t(block_table), slot_mapping=t(slot_mapping),
                      seq_lens_cpu_upper_bound=t(seq_lens if seq_lens_cpu is None
                                                 else seq_lens_cpu), **conv)


class VllmConfigs:
    """Real VllmConfig objects (vLLM's own config classes) for a local, weightless model
    description: a Llama-shaped config.json with 32 query heads, 8 KV heads, head size 128."""

    def __init__(self, env: Dict[str, Any]) -> None:
        from vllm.config import ModelConfig
        self.env = env
        self.dir = tempfile.mkdtemp(prefix="libattn-vllm-model-")
        json.dump({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
                   "hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8,
                   "head_dim": 128, "num_hidden_layers": 2, "intermediate_size": 11008,
                   "vocab_size": 32000, "max_position_embeddings": 131072,
                   "torch_dtype": "bfloat16", "rms_norm_eps": 1e-5},
                  open(os.path.join(self.dir, "config.json"), "w"))
        self.model = ModelConfig(model=self.dir, skip_tokenizer_init=True, max_model_len=131072,
                                 dtype="bfloat16")
        self.cache: Dict[Tuple[Any, ...], Any] = {}
        self.notes: List[str] = []

    def shaped_model(self, kv_heads: int, head_dim: int, max_model_len: int) -> Any:
        """vLLM's ModelConfig of the same Llama-shaped model with ``kv_heads`` KV heads of
        ``head_dim`` (its own config.json; one object per shape)."""
        key = ("shape", kv_heads, head_dim, max_model_len)
        if key not in self.cache:
            from vllm.config import ModelConfig
            d = os.path.join(self.dir, f"kv{kv_heads}-d{head_dim}")
            os.makedirs(d, exist_ok=True)
            cfg = json.load(open(os.path.join(self.dir, "config.json")))
            cfg.update(num_key_value_heads=kv_heads, head_dim=head_dim)
            json.dump(cfg, open(os.path.join(d, "config.json"), "w"))
            self.cache[key] = ModelConfig(model=d, skip_tokenizer_init=True,
                                          max_model_len=max_model_len, dtype="bfloat16")
        return self.cache[key]

    def get(self, max_num_seqs: int, max_tokens: int, spec_tokens: int,
            block_size: Optional[int] = None, variant: Any = None,
            max_model_len: int = 131072) -> Any:
        """The config for these sizes (one object per distinct arguments; ``variant`` only
        keeps configs apart that a caller modifies differently)."""
        key = (max_num_seqs, max_tokens, spec_tokens, block_size, variant, max_model_len)
        if key not in self.cache:
            from vllm.config import CacheConfig, DeviceConfig, SchedulerConfig, VllmConfig
            kw = {}
            if block_size is not None:
                kw["cache_config"] = CacheConfig(block_size=block_size)
            model = self.model
            if max_model_len != self.model.max_model_len:
                from vllm.config import ModelConfig
                model = ModelConfig(model=self.dir, skip_tokenizer_init=True,
                                    max_model_len=max_model_len, dtype="bfloat16")
            vc = VllmConfig(model_config=model, device_config=DeviceConfig(device="cpu"),
                            scheduler_config=SchedulerConfig(
                                max_num_seqs=max_num_seqs, max_num_batched_tokens=max_tokens,
                                max_model_len=max_model_len, is_encoder_decoder=False), **kw)
            if spec_tokens:
                vc = self._with_spec(vc, spec_tokens)
            self.cache[key] = vc
        return self.cache[key]

    def _with_spec(self, vc: Any, spec_tokens: int) -> Any:
        try:
            from vllm.config import SpeculativeConfig
            sc = SpeculativeConfig(method="ngram", num_speculative_tokens=spec_tokens,
                                   prompt_lookup_max=4, prompt_lookup_min=2,
                                   target_model_config=self.model,
                                   target_parallel_config=vc.parallel_config)
            object.__setattr__(vc, "speculative_config", sc)
        except Exception as e:  # the builders read only num_speculative_tokens/parallel_drafting
            object.__setattr__(vc, "speculative_config", types.SimpleNamespace(
                num_speculative_tokens=spec_tokens, parallel_drafting=False))
            note = (f"SpeculativeConfig(method='ngram') failed ({type(e).__name__}: "
                    f"{str(e)[:120]}); a stand-in with num_speculative_tokens={spec_tokens}, "
                    f"parallel_drafting=False was used")
            if note not in self.notes:
                self.notes.append(note)
        return vc


#: the maximum capture size each adjusted CompilationConfig was configured with (by id)
_CONFIGURED_MAX: Dict[int, Any] = {}


def engine_capture_sizes(vc: Any, num_speculative_tokens: int, v2: Any = None) -> None:
    """What vLLM 0.33's engine does to the capture sizes before it makes the builders: its
    config post-init fills in the default list ([1, 2, 4], multiples of 8 below 256, of 16 up to
    max_cudagraph_capture_size) when none is given, and model runner V1's
    resolve_cudagraph_mode_and_sizes rounds them to multiples of 1 + k with FULL decode graphs
    (adjust_cudagraph_sizes_for_spec_decode, which raises where no size is left: a refusal of
    the configuration, as the engine's); model runner V2 does not round. ``v2``: the runner the
    item gives libattn (config->use_v2_model_runner); None: the config's own answer. Call once
    per config, after the mode and the maximum are set; configured_max_capture_size gives the
    maximum as configured (libattn takes it and rounds it alike)."""
    from vllm.config import CUDAGraphMode
    cc = vc.compilation_config
    _CONFIGURED_MAX.setdefault(id(cc), cc.max_cudagraph_capture_size)
    if v2 is None:
        v2 = bool(vc.use_v2_model_runner)
    if v2 or num_speculative_tokens <= 0 or cc.max_cudagraph_capture_size is None or \
            cc.cudagraph_mode.decode_mode() != CUDAGraphMode.FULL:
        return
    if not cc.cudagraph_capture_sizes:
        top = cc.max_cudagraph_capture_size
        cc.cudagraph_capture_sizes = [s for s in [1, 2, 4] + list(range(8, 256, 8)) +
                                      list(range(256, top + 1, 16)) if s <= top]
    cc.adjust_cudagraph_sizes_for_spec_decode(1 + num_speculative_tokens)


def configured_max_capture_size(vc: Any) -> Any:
    """max_cudagraph_capture_size as configured, before engine_capture_sizes rounded it."""
    cc = vc.compilation_config
    return _CONFIGURED_MAX.get(id(cc), cc.max_cudagraph_capture_size)
