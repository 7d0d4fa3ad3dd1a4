package attn_test

import (
	"testing"

	"libattn.dev/attn"
)

// ABI 1.3: attn_backend_info through BackendInfo, and attn_get_api's table against the
// functions the binding resolved by name.

func TestEveryBackendDescribesItself(t *testing.T) {
	registryMu.Lock()
	defer registryMu.Unlock()
	l := library(t)
	infos := get(l.BackendInfos())(t)
	names := get(l.Backends())(t)
	is(t, "count", len(infos), len(names))
	var all uint32
	for i, info := range infos {
		is(t, "Index", info.Index, i)
		is(t, "Name", info.Name, names[i])
		is(t, info.Name+" origin", info.Origin, attn.BackendBuiltin)
		if info.KVCacheKinds == 0 {
			t.Errorf("%s accepts no KV cache kind", info.Name)
		}
		all |= info.KVCacheKinds
	}
	// between them the built-in backends build for every kind of spec
	is(t, "kinds of all backends", all, uint32(1)<<(uint(attn.KVCircularBuffer)+1)-1)
	_, err := l.BackendInfo(len(infos))
	wantError(t, err, attn.ErrNotFound, "out of range")
	_, err = l.BackendInfo(-1)
	wantError(t, err, attn.ErrNotFound, "negative")
}

func TestAPluginBackendSaysSo(t *testing.T) {
	registryMu.Lock()
	defer registryMu.Unlock()
	l := library(t)
	before := l.BackendCount()
	plugin := get(l.LoadPlugin(examplePluginPath(t)))(t)
	info := get(l.BackendInfo(before))(t)
	is(t, "Name", info.Name, "EXAMPLE_PAGED")
	is(t, "Origin", info.Origin, attn.BackendPlugin)
	is(t, "VLLMRelease", info.VLLMRelease, "plugin")
	is(t, "VLLMNames", len(info.VLLMNames), 0)
	is(t, "Accepts(KVMamba)", info.Accepts(attn.KVMamba), true)
	if err := plugin.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestTheFunctionTableIsTheResolvedSymbols(t *testing.T) {
	l := library(t)
	size := get(l.FunctionTableSize())(t)
	is(t, "struct_size", size, 8*(1+len(attn.FunctionNames())))
	if err := l.VerifyFunctionTable(); err != nil {
		t.Fatal(err)
	}
}
