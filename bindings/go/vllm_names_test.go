package attn_test

import (
	"reflect"
	"testing"

	"libattn.dev/attn"
)

// ABI 1.7: each backend's vLLM names (BackendInfo.VLLMNames), and each name builds with that
// backend's builder.
func TestVLLMNamesResolveToTheirBackend(t *testing.T) {
	registryMu.Lock()
	defer registryMu.Unlock()
	l := library(t)
	names := map[string][]string{}
	for _, info := range get(l.BackendInfos())(t) {
		names[info.Name] = info.VLLMNames
	}
	for backend, want := range map[string][]string{
		"MAMBA2":         {"MAMBA2", "MAMBA2_ATTN"},
		"LINEAR_ATTN":    {"LINEAR_ATTN", "LINEAR"},
		"ROCM_AITER_MLA": {"ROCM_AITER_MLA", "ROCM_AITER_TRITON_MLA", "AITER_TRITON_MLA"},
		"FLASH_ATTN":     {"FLASH_ATTN"},
	} {
		if !reflect.DeepEqual(names[backend], want) {
			t.Errorf("%s: VLLMNames %q, want %q", backend, names[backend], want)
		}
	}
	is(t, "TREE_ATTN's VLLMNames", len(names["TREE_ATTN"]), 0)
	mamba := attn.NewKVCacheSpec(16, 1, 1)
	mamba.Kind, mamba.MambaChunkSize = attn.KVMamba, 8
	cfg := config(90)
	for name, backend := range map[string]string{"MAMBA2_ATTN": "MAMBA2", "MAMBA1_ATTN": "MAMBA1",
		"SHORT_CONV_ATTN": "SHORT_CONV", "LINEAR": "LINEAR_ATTN"} {
		b := get(l.NewBuilder(name, mamba, cfg))(t)
		is(t, name+"'s builder", b.BackendName(), backend)
		b.Close()
		is(t, name+"'s CUDA graph support", get(l.BackendCudagraphSupport(name, mamba, cfg))(t),
			get(l.BackendCudagraphSupport(backend, mamba, cfg))(t))
	}
	_, err := l.NewBuilder("mamba2_attn", mamba, cfg)
	wantError(t, err, attn.ErrNotFound, "unknown backend 'mamba2_attn'")
}
