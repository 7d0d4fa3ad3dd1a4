"""The backend registry and the queries that need no builder (mixed into :class:`Library`)."""
from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass
from typing import Any, FrozenSet, List, Optional, Sequence, Tuple

from .config import BuilderConfig, KvCacheSpec, PerLayerParams, layer_array
from .enums import BackendOrigin, CudagraphMode, CudagraphSupport, KvCacheKind, Status
from .errors import Unsupported
from .functions import OPTIONAL_SIGNATURES, SINCE
from .structs import (attn_backend_info_t, attn_cudagraph_resolve_args_t,
                      attn_per_layer_params_t, new)

__all__ = ["RegistryMixin", "BackendInfo", "BackendOrigin"]




@dataclass(frozen=True)
class BackendInfo:
    """What ``attn_backend_info`` says of a backend (ABI 1.3)."""
    index: int
    name: str
    #: The KV cache spec kinds it builds for (the bits of ``kv_cache_kinds``).
    kinds: FrozenSet[KvCacheKind]
    origin: BackendOrigin
    #: The vLLM release whose builder it matches ("" when unknown, "plugin" for plugins).
    vllm_release: str
    #: The names vLLM 0.33.0 uses for it (ABI 1.7 ``vllm_names``): its backend enum member and
    #: its class's ``get_name()``, e.g. ``("MAMBA2", "MAMBA2_ATTN")``; each is accepted wherever a
    #: backend name is. Empty when vLLM has no name of its own for it, for a plugin's backends,
    #: and from a library older than 1.7.
    vllm_names: Tuple[str, ...] = ()

    def accepts(self, kind: KvCacheKind) -> bool:
        """Whether it builds for specs of ``kind``."""
        return kind in self.kinds


class RegistryMixin:
    """Registry methods of :class:`~libattn.Library`."""

    def backend_count(self) -> int:
        """``attn_backend_count``: built-in backends and those of loaded plugins."""
        return int(self.raw.attn_backend_count())

    def backend_name(self, index: int) -> str:
        """``attn_backend_name``: the name at ``index`` (NotFound past the end)."""
        out = ctypes.c_char_p()
        self.check(self.raw.attn_backend_name(index, ctypes.byref(out)))
        return out.value.decode()

    def backends(self) -> List[str]:
        """Every registered backend name, built-in ones first."""
        return [self.backend_name(i) for i in range(self.backend_count())]

    def optional_function(self, name: str):
        """A function of :data:`~libattn.functions.OPTIONAL_SIGNATURES` (ABI 1.3+), resolved once
        and then kept as ``raw.<name>``; :class:`~libattn.Unsupported` when the loaded library
        is older and lacks it."""
        fn = getattr(self.raw, name, None)
        if fn is None:
            try:
                fn = getattr(self._dll, name)
            except AttributeError:
                raise Unsupported(Status.UNSUPPORTED,
                                  f"'{self.path}' (libattn {'.'.join(map(str, self.version))}) "
                                  f"has no {name} (ABI {SINCE[name][0]}.{SINCE[name][1]})"
                                  ) from None
            fn.restype, fn.argtypes = OPTIONAL_SIGNATURES[name]
            setattr(self.raw, name, fn)
        return fn

    def backend_info(self, index: int) -> BackendInfo:
        """``attn_backend_info``: the backend at ``index`` (NotFound past the end;
        Unsupported from a library older than 1.3)."""
        out = new(attn_backend_info_t)
        self.check(self.optional_function("attn_backend_info")(index, ctypes.byref(out)))
        kinds = frozenset(k for k in KvCacheKind if out.kv_cache_kinds & (1 << int(k)))
        # a library older than 1.7 writes only the 1.3 fields and leaves vllm_names NULL
        names = (out.vllm_names or b"").decode()
        return BackendInfo(index=index, name=out.name.decode(), kinds=kinds,
                           origin=BackendOrigin(out.origin),
                           vllm_release=(out.vllm_release or b"").decode(),
                           vllm_names=tuple(names.split(",")) if names else ())

    def vllm_release(self) -> Tuple[str, Tuple[int, int, int]]:
        """``attn_get_vllm_release`` (ABI 1.4): the vLLM release the loaded library matches, as
        ``("0.33.0", (0, 33, 0))`` (Unsupported from a library older than 1.4)."""
        release = ctypes.c_char_p()
        v = [ctypes.c_uint32() for _ in range(3)]
        self.check(self.optional_function("attn_get_vllm_release")(
            ctypes.byref(release), *(ctypes.byref(x) for x in v)))
        return (release.value or b"").decode(), tuple(int(x.value) for x in v)  # type: ignore

    def backend_infos(self) -> List[BackendInfo]:
        """:meth:`backend_info` of every registered backend, built-in ones first."""
        return [self.backend_info(i) for i in range(self.backend_count())]

    def backend_cudagraph_support(self, backend: str, spec: KvCacheSpec,
                                  config: BuilderConfig) -> CudagraphSupport:
        """``attn_backend_cudagraph_support``: the level a builder would have, without one."""
        v = ctypes.c_int32()
        self.check(self.raw.attn_backend_cudagraph_support(
            backend.encode(), ctypes.byref(spec.to_struct()), config.to_struct().ref,
            ctypes.byref(v)))
        return CudagraphSupport(v.value)

    def builder_workspace_size(self, backend: str, spec: KvCacheSpec,
                               config: BuilderConfig) -> int:
        """``attn_builder_workspace_size``: bytes of caller workspace a builder would use."""
        v = ctypes.c_size_t()
        self.check(self.raw.attn_builder_workspace_size(
            backend.encode(), ctypes.byref(spec.to_struct()), config.to_struct().ref,
            ctypes.byref(v)))
        return int(v.value)

    def builder(self, backend: str, spec: KvCacheSpec, config: BuilderConfig) -> "Builder":
        """A :class:`~libattn.Builder` for ``backend``."""
        from .builder import Builder
        return Builder(self, backend, spec, config)

    def persistent_builder(self, backend: str, spec: KvCacheSpec, config: BuilderConfig,
                           batch: Any, validate: int = 0, trust_inputs: bool = False) -> Any:
        """A builder for ``backend`` at the validation level ``validate`` (an
        ``attn_validate_mode_t``, HOST by default, passed through as the config's ``validate``),
        bound to ``batch`` (a :class:`~libattn.PersistentBatch`): a
        :class:`~libattn.persistent.BoundBatch` (``.build(num_reqs, ...)`` per step;
        ``.builder`` is the :class:`~libattn.Builder`); ``trust_inputs``: see the binding's
        README (Persistent batch)."""
        from .persistent import persistent_builder
        return persistent_builder(self, backend, spec, config, batch, validate, trust_inputs)

    def min_cudagraph_support(self, builders: Sequence["Builder"]) -> CudagraphSupport:
        """``attn_min_cudagraph_support``: the lowest level over several builders (how vLLM's
        model runner picks its CUDA graph mode)."""
        arr = (ctypes.c_void_p * max(len(builders), 1))(*(b.handle for b in builders))
        v = ctypes.c_int32()
        self.check(self.raw.attn_min_cudagraph_support(arr, len(builders), ctypes.byref(v)))
        return CudagraphSupport(v.value)

    def resolve_cudagraph_mode_and_sizes(
            self, cudagraph_mode: int, groups: Sequence[Tuple[int, Optional[str], Optional[int]]] = (),
            *, uniform_decode_query_len: int = 1,
            cudagraph_capture_sizes: Sequence[int] = (), max_cudagraph_capture_size: int = 0,
            use_v2_model_runner: bool = False, piecewise_capture_available: bool = True,
            splitting_ops_contain_attention: bool = True, vllm_compile: bool = True,
            use_inductor_graph_partition: bool = False, has_mamba_layers: bool = False,
            is_profiling: bool = False, adaptive_verification: bool = False,
            num_blocks: int = 0, max_num_reqs: int = 0) -> Tuple[CudagraphMode, List[int], int]:
        """``attn_resolve_cudagraph_mode_and_sizes`` (ABI 1.4): vLLM 0.33's CUDA graph mode
        resolution. ``groups``: one ``(level, backend_name or None, varlen bound or None)`` per
        attention group (a :class:`~libattn.Builder`'s ``cudagraph_support``, ``backend`` and
        ``varlen_cudagraph_max_query_len``; see :meth:`cudagraph_groups`). Returns the mode, the
        capture sizes and ``max_cudagraph_capture_size`` (0 for None)."""
        n = len(groups)
        levels = (ctypes.c_int32 * max(n, 1))(*(int(g[0]) for g in groups))
        names = (ctypes.c_char_p * max(n, 1))(
            *(None if g[1] is None else g[1].encode() for g in groups))
        bounds = (ctypes.c_int32 * max(n, 1))(*(-1 if g[2] is None else int(g[2]) for g in groups))
        sizes = (ctypes.c_int32 * max(len(cudagraph_capture_sizes), 1))(*cudagraph_capture_sizes)
        a = new(attn_cudagraph_resolve_args_t)
        a.cudagraph_mode = int(cudagraph_mode)
        a.uniform_decode_query_len = uniform_decode_query_len
        a.num_groups = n
        a.group_cudagraph_support = ctypes.cast(levels, ctypes.POINTER(ctypes.c_int32))
        a.group_backend_names = ctypes.cast(names, type(a.group_backend_names))
        a.group_varlen_max_query_len = ctypes.cast(bounds, ctypes.POINTER(ctypes.c_int32))
        a.cudagraph_capture_sizes = ctypes.cast(sizes, ctypes.POINTER(ctypes.c_int32))
        a.num_cudagraph_capture_sizes = len(cudagraph_capture_sizes)
        a.max_cudagraph_capture_size = max_cudagraph_capture_size
        a.use_v2_model_runner = int(use_v2_model_runner)
        a.piecewise_capture_available = int(piecewise_capture_available)
        a.splitting_ops_contain_attention = int(splitting_ops_contain_attention)
        a.vllm_compile = int(vllm_compile)
        a.use_inductor_graph_partition = int(use_inductor_graph_partition)
        a.has_mamba_layers = int(has_mamba_layers)
        a.is_profiling = int(is_profiling)
        a.adaptive_verification = int(adaptive_verification)
        a.num_blocks = num_blocks
        a.max_num_reqs = max_num_reqs
        mode, max_size, count = ctypes.c_int32(), ctypes.c_int32(), ctypes.c_size_t()
        self.check(self.optional_function("attn_resolve_cudagraph_mode_and_sizes")(
            ctypes.byref(a), ctypes.byref(mode), ctypes.byref(max_size), None,
            ctypes.byref(count)))
        out = (ctypes.c_int32 * max(count.value, 1))()
        self.check(self.optional_function("attn_resolve_cudagraph_mode_and_sizes")(
            ctypes.byref(a), ctypes.byref(mode), ctypes.byref(max_size), out,
            ctypes.byref(count)))
        return CudagraphMode(mode.value), list(out[:count.value]), int(max_size.value)

    @staticmethod
    def cudagraph_groups(builders: Sequence["Builder"]
                         ) -> List[Tuple[int, Optional[str], Optional[int]]]:
        """The ``groups`` of :meth:`resolve_cudagraph_mode_and_sizes` from builders."""
        return [(b.cudagraph_support, b.backend_name, b.varlen_cudagraph_max_query_len)
                for b in builders]

    def infer_global_hyperparameters(
            self, layers: Sequence[PerLayerParams]) -> Tuple[PerLayerParams, bool, bool]:
        """``attn_infer_global_hyperparameters``: (global params, has_same_window_lefts,
        has_same_all_params), as vLLM's ``infer_global_hyperparameters``."""
        arr = layer_array(layers)
        out = new(attn_per_layer_params_t)
        same_window, same_all = ctypes.c_int32(), ctypes.c_int32()
        self.check(self.raw.attn_infer_global_hyperparameters(
            arr, len(layers), ctypes.byref(out), ctypes.byref(same_window),
            ctypes.byref(same_all)))
        return PerLayerParams.from_struct(out), bool(same_window.value), bool(same_all.value)

    def load_plugin(self, path: str) -> "Plugin":
        """``attn_plugin_load``: registers the plugin's backends (AbiMismatch for another ABI
        major, NotFound without the entry point, InvalidArgument for a malformed table)."""
        from .plugin import Plugin
        out = ctypes.c_void_p()
        self.check(self.raw.attn_plugin_load(os.fsencode(path), ctypes.byref(out)))
        return Plugin(self, out.value, os.fspath(path))


from typing import TYPE_CHECKING  # noqa: E402

if TYPE_CHECKING:
    from .builder import Builder
    from .plugin import Plugin
