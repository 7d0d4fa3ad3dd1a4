package attn

/*
#include "capi.h"
*/
import "C"

import "strings"

// BackendCount is the number of registered backends, built-in and from plugins
// (attn_backend_count).
func (l *Library) BackendCount() int { return int(C.gattn_backend_count(l.api)) }

// BackendName is the name of backend i, 0 <= i < BackendCount() (attn_backend_name);
// ErrNotFound out of range.
func (l *Library) BackendName(i int) (string, error) {
	if i < 0 {
		return "", newError(ErrNotFound, "backend index %d is negative", i)
	}
	var name *C.char
	if err := l.takeError(C.gattn_backend_name(l.api, C.size_t(i), &name)); err != nil {
		return "", err
	}
	return C.GoString(name), nil
}

// BackendOrigin says where a registered backend comes from (attn_backend_origin_t, ABI 1.3).
type BackendOrigin int32

// The origins.
const (
	BackendBuiltin BackendOrigin = C.ATTN_BACKEND_BUILTIN
	BackendPlugin  BackendOrigin = C.ATTN_BACKEND_PLUGIN
)

// BackendInfo is what attn_backend_info says of a registered backend (ABI 1.3).
type BackendInfo struct {
	Index int
	Name  string
	// KVCacheKinds has bit k set when the backend builds for the KVCacheKind whose value is k.
	KVCacheKinds uint32
	Origin       BackendOrigin
	// VLLMRelease is the vLLM release whose builder it matches ("" when unknown, "plugin" for a
	// plugin's backends).
	VLLMRelease string
	// VLLMNames are the names vLLM 0.33.0 uses for it (ABI 1.7 vllm_names): its backend enum
	// member and its class's get_name(), e.g. ["MAMBA2" "MAMBA2_ATTN"]; each is accepted
	// wherever a backend name is (NewBuilder, BackendCudagraphSupport, ...). Empty when vLLM has
	// no name of its own for it, for a plugin's backends, and from a library older than 1.7.
	VLLMNames []string
}

// Accepts says whether the backend builds for specs of this kind.
func (b BackendInfo) Accepts(kind KVCacheKind) bool {
	return kind >= 0 && kind < 32 && b.KVCacheKinds&(1<<uint(kind)) != 0
}

func (l *Library) has(function string) error { return l.hasSince(function, "1.3") }

// hasSince is ErrUnsupported, naming the ABI version that added the function, when the loaded
// library lacks it.
func (l *Library) hasSince(function, abi string) error {
	name := C.CString(function)
	defer freeString(name)
	if C.gattn_has_function(l.api, name) == 0 {
		return newError(ErrUnsupported, "%s: the loaded libattn %d.%d.%d has no %s (ABI %s)",
			l.path, l.version.Major, l.version.Minor, l.version.Patch, function, abi)
	}
	return nil
}

// VLLMRelease is the vLLM release the loaded library matches (attn_get_vllm_release, ABI
// 1.4): its name ("0.33.0") and numbers. ErrUnsupported from a library older than 1.4.
func (l *Library) VLLMRelease() (string, Version, error) {
	if err := l.hasSince("attn_get_vllm_release", "1.4"); err != nil {
		return "", Version{}, err
	}
	var release *C.char
	var major, minor, patch C.uint32_t
	if err := l.takeError(C.gattn_get_vllm_release(l.api, &release, &major, &minor, &patch)); err != nil {
		return "", Version{}, err
	}
	return C.GoString(release), Version{uint32(major), uint32(minor), uint32(patch)}, nil
}

// BackendInfo describes backend i, 0 <= i < BackendCount() (attn_backend_info): its name,
// the KV cache spec kinds it accepts, its origin and the vLLM release it matches. ErrNotFound
// out of range; ErrUnsupported from a library older than 1.3.
func (l *Library) BackendInfo(i int) (BackendInfo, error) {
	if err := l.has("attn_backend_info"); err != nil {
		return BackendInfo{}, err
	}
	if i < 0 {
		return BackendInfo{}, newError(ErrNotFound, "backend index %d is negative", i)
	}
	out := C.gattn_backend_info_init()
	if err := l.takeError(C.gattn_backend_info(l.api, C.size_t(i), &out)); err != nil {
		return BackendInfo{}, err
	}
	// a library older than 1.7 writes only the 1.3 fields and leaves vllm_names NULL ("")
	var names []string
	if list := C.GoString(out.vllm_names); list != "" {
		names = strings.Split(list, ",")
	}
	return BackendInfo{Index: i, Name: C.GoString(out.name), KVCacheKinds: uint32(out.kv_cache_kinds),
		Origin: BackendOrigin(out.origin), VLLMRelease: C.GoString(out.vllm_release),
		VLLMNames: names}, nil
}

// BackendInfos is BackendInfo of every registered backend, in registry order.
func (l *Library) BackendInfos() ([]BackendInfo, error) {
	n := l.BackendCount()
	infos := make([]BackendInfo, 0, n)
	for i := 0; i < n; i++ {
		info, err := l.BackendInfo(i)
		if err != nil {
			return nil, err
		}
		infos = append(infos, info)
	}
	return infos, nil
}

// functionTable is attn_get_api's table (ABI 1.3) for a caller of the library's own version.
func (l *Library) functionTable() (*C.attn_api_t, error) {
	if err := l.has("attn_get_api"); err != nil {
		return nil, err
	}
	var table *C.attn_api_t
	if err := l.takeError(C.gattn_get_api(l.api, C.uint32_t(l.version.Major), C.uint32_t(l.version.Minor), &table)); err != nil {
		return nil, err
	}
	return table, nil
}

// FunctionTableSize is the struct_size of the library's function table (attn_get_api, ABI 1.3);
// VerifyFunctionTable compares its members.
func (l *Library) FunctionTableSize() (int, error) {
	table, err := l.functionTable()
	if err != nil {
		return 0, err
	}
	return int(table.struct_size), nil
}

// VerifyFunctionTable checks that every member of attn_get_api's table is the function the
// binding resolved by name; an ErrInternal names the first that is not.
func (l *Library) VerifyFunctionTable() error {
	table, err := l.functionTable()
	if err != nil {
		return err
	}
	if i := int(C.gattn_table_mismatch(l.api, table)); i >= 0 {
		return newError(ErrInternal, "attn_get_api's member %s is not the symbol of that name",
			C.GoString(C.gattn_function_name(C.int(i))))
	}
	return nil
}

// Backends lists the registered backends: the built-in ones first, in a fixed order, then
// plugins' in load order (BackendInfos says which is which).
func (l *Library) Backends() ([]string, error) {
	n := l.BackendCount()
	names := make([]string, 0, n)
	for i := 0; i < n; i++ {
		name, err := l.BackendName(i)
		if err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, nil
}

// BackendCudagraphSupport is the CUDA graph support a backend's builder would have for this
// spec and config, without creating one (vLLM's classmethod get_cudagraph_support).
func (l *Library) BackendCudagraphSupport(backend string, spec KVCacheSpec, cfg BuilderConfig) (CudagraphSupport, error) {
	a := newArena()
	defer a.release()
	name, err := a.cstring(backend, "backend")
	if err != nil {
		return CGNever, err
	}
	cs := spec.toC()
	cc, err := cfg.toC(a)
	if err != nil {
		return CGNever, err
	}
	var level C.int32_t
	if err := l.takeError(C.gattn_backend_cudagraph_support(l.api, name, &cs, cc, &level)); err != nil {
		return CGNever, err
	}
	return CudagraphSupport(level), nil
}

// BuilderWorkspaceSize is the bytes of workspace a builder of this backend, spec and config
// needs for its persistent buffers (attn_builder_workspace_size); pass a HostBuffer that large
// as BuilderConfig.Workspace to place them there.
func (l *Library) BuilderWorkspaceSize(backend string, spec KVCacheSpec, cfg BuilderConfig) (uint64, error) {
	a := newArena()
	defer a.release()
	name, err := a.cstring(backend, "backend")
	if err != nil {
		return 0, err
	}
	cs := spec.toC()
	cfg.Workspace, cfg.ExternalWorkspace, cfg.ExternalWorkspaceSize = nil, 0, 0 // ignored by libattn
	cc, err := cfg.toC(a)
	if err != nil {
		return 0, err
	}
	var bytes C.size_t
	if err := l.takeError(C.gattn_builder_workspace_size(l.api, name, &cs, cc, &bytes)); err != nil {
		return 0, err
	}
	return uint64(bytes), nil
}

// MinCudagraphSupport is the lowest level over builders, the reduction vLLM's model runner
// does over its KV cache groups (attn_min_cudagraph_support); CGAlways for none.
func (l *Library) MinCudagraphSupport(builders ...*Builder) (CudagraphSupport, error) {
	ptrs := make([]*C.attn_builder_t, 0, len(builders))
	var held []*Builder
	defer func() {
		for _, b := range held {
			b.life.RUnlock()
		}
	}()
	for i, b := range builders {
		if b == nil {
			return CGNever, invalid("builders[%d] is nil", i)
		}
		seen := false
		for _, h := range held {
			seen = seen || h == b
		}
		if !seen {
			b.life.RLock()
			held = append(held, b)
		}
		if b.closed {
			return CGNever, invalid("builders[%d]: %s", i, b.closedError().(*Error).Message)
		}
		ptrs = append(ptrs, b.ptr)
	}
	var level C.int32_t
	var first **C.attn_builder_t
	if len(ptrs) > 0 {
		first = &ptrs[0]
	}
	if err := l.takeError(C.gattn_min_cudagraph_support(l.api, first, C.size_t(len(ptrs)), &level)); err != nil {
		return CGNever, err
	}
	return CudagraphSupport(level), nil
}

// GlobalHyperparameters is the result of InferGlobalHyperparameters.
type GlobalHyperparameters struct {
	Global          PerLayerParams // the first layer's parameters
	SameWindowLefts bool           // every layer has the first's window_left
	SameAllParams   bool           // every layer equals the first
}

// InferGlobalHyperparameters is vLLM's infer_global_hyperparameters
// (attn_infer_global_hyperparameters); no layers is an error ("No attention layers found in the
// model").
func (l *Library) InferGlobalHyperparameters(layers []PerLayerParams) (GlobalHyperparameters, error) {
	cl := make([]C.attn_per_layer_params_t, len(layers))
	for i := range layers {
		cl[i] = layers[i].toC()
	}
	var first *C.attn_per_layer_params_t
	if len(cl) > 0 {
		first = &cl[0]
	}
	global := C.gattn_per_layer_params_init()
	var sameWindow, sameAll C.int32_t
	err := l.takeError(C.gattn_infer_global_hyperparameters(l.api, first, C.size_t(len(cl)), &global, &sameWindow, &sameAll))
	if err != nil {
		return GlobalHyperparameters{}, err
	}
	return GlobalHyperparameters{perLayerFromC(global), sameWindow != 0, sameAll != 0}, nil
}
