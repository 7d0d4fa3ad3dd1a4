package attn

/*
#include "capi.h"
*/
import "C"

import (
	"runtime"
	"sync"
)

// Builder is a metadata builder for one backend, KV cache spec and config (attn_builder_t): its
// persistent buffers are allocated once, at NewBuilder. Close it (a finalizer is a safety
// net); Close is idempotent and waits for calls in progress.
//
// Queries (CudagraphSupport, ReorderBatchThreshold, ...) may run on any goroutine at any time.
// Builds and updates serve one goroutine at a time: a build that finds another build, or a
// goroutine reading this builder's metadata, in progress returns an *Error with ErrBusy and
// changes nothing.
type Builder struct {
	lib       *Library
	ptr       *C.attn_builder_t
	name      string
	builtIn   bool        // one of libattn's own backends (not a plugin's)
	workspace *HostBuffer // kept reachable for the builder's lifetime

	life   sync.RWMutex // read: any call; write: Close
	closed bool

	state  sync.RWMutex // write: builds and updates; read: readers of its metadata
	gen    uint64       // successful builds and updates so far, and rebuilds libattn retired (BuildGroups)
	stream Stream
	pool   []*arena           // staging arenas this builder references
	live   []*arena           // those the current metadata views
	last   *C.attn_metadata_t // the handle of its latest result (BuildGroups' failure probe)
}

// NewBuilder creates a builder (attn_builder_create). Errors: ErrNotFound (unknown backend),
// ErrInvalidArgument (a malformed spec or config, named), ErrUnsupported, ErrOutOfMemory,
// ErrCUDA.
func (l *Library) NewBuilder(backend string, spec KVCacheSpec, cfg BuilderConfig) (*Builder, error) {
	a := newArena()
	defer a.release()
	name, err := a.cstring(backend, "backend")
	if err != nil {
		return nil, err
	}
	cs := spec.toC()
	cc, err := cfg.toC(a)
	if err != nil {
		return nil, err
	}
	var ptr *C.attn_builder_t
	if err := l.takeError(C.gattn_builder_create(l.api, name, &cs, cc, &ptr)); err != nil {
		return nil, err
	}
	b := &Builder{
		lib: l, ptr: ptr, workspace: cfg.Workspace,
		name: C.GoString(C.gattn_builder_backend_name(l.api, ptr)),
	}
	b.builtIn = l.backendIsBuiltIn(b.name)
	runtime.SetFinalizer(b, (*Builder).Close)
	return b, nil
}

// backendIsBuiltIn says whether a backend is one of libattn's own rather than a plugin's: its
// origin from attn_backend_info (ABI 1.3); from an older library, whether it was registered when
// Open ran (the registry lists the built-in backends first).
func (l *Library) backendIsBuiltIn(name string) bool {
	if l.has("attn_backend_info") == nil {
		infos, err := l.BackendInfos()
		if err == nil {
			for _, info := range infos {
				if info.Name == name {
					return info.Origin == BackendBuiltin
				}
			}
		}
		return false
	}
	for i := 0; i < l.openCount; i++ {
		if n, err := l.BackendName(i); err == nil && n == name {
			return true
		}
	}
	return false
}

// Close destroys the builder, its buffers and its metadata (attn_builder_destroy). It waits for
// calls in progress; later calls do nothing and return nil.
func (b *Builder) Close() error {
	b.life.Lock()
	defer b.life.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	runtime.SetFinalizer(b, nil)
	C.gattn_builder_destroy(b.lib.api, b.ptr)
	b.ptr, b.last = nil, nil
	for _, a := range b.pool {
		a.release()
	}
	b.pool, b.live = nil, nil
	b.workspace = nil
	return nil
}

func (b *Builder) closedError() error {
	return invalid("builder '%s' is closed", b.name)
}

// use runs f while the builder is open.
func (b *Builder) use(f func() error) error {
	b.life.RLock()
	defer b.life.RUnlock()
	if b.closed {
		return b.closedError()
	}
	return f()
}

// BackendName is the backend's name ("FLASH_ATTN").
func (b *Builder) BackendName() string { return b.name }

// Library is the library the builder belongs to.
func (b *Builder) Library() *Library { return b.lib }

// SetStream sets the CUDA stream of later builds and updates (0, the default stream, at first;
// host builders ignore it).
func (b *Builder) SetStream(s Stream) {
	b.state.Lock()
	b.stream = s
	b.state.Unlock()
}

// CudagraphSupport is the builder's CUDA graph support level (attn_builder_cudagraph_support).
func (b *Builder) CudagraphSupport() (CudagraphSupport, error) {
	var level C.int32_t
	err := b.use(func() error {
		return b.lib.takeError(C.gattn_builder_cudagraph_support(b.lib.api, b.ptr, &level))
	})
	return CudagraphSupport(level), err
}

// ReorderBatchThreshold is the query length the builder pulls to the front of the batch
// (vLLM's reorder_batch_threshold), or NoReorder (None).
func (b *Builder) ReorderBatchThreshold() (int32, error) {
	var v C.int32_t
	err := b.use(func() error {
		return b.lib.takeError(C.gattn_builder_reorder_batch_threshold(b.lib.api, b.ptr, &v))
	})
	return int32(v), err
}

// SupportsUpdateBlockTable tells whether UpdateBlockTable works with this builder.
func (b *Builder) SupportsUpdateBlockTable() (bool, error) {
	var v C.int32_t
	err := b.use(func() error {
		return b.lib.takeError(C.gattn_builder_supports_update_block_table(b.lib.api, b.ptr, &v))
	})
	return v != 0, err
}

// UseCascadeAttention tells whether the builder would use cascade attention for a batch
// (vLLM's use_cascade_attention heuristic).
func (b *Builder) UseCascadeAttention(q CascadeQuery) (bool, error) {
	var v C.int32_t
	err := b.use(func() error {
		a := newArena()
		defer a.release()
		cq, err := q.toC(a)
		if err != nil {
			return err
		}
		return b.lib.takeError(C.gattn_use_cascade_attention(b.lib.api, b.ptr, cq, &v))
	})
	return v != 0, err
}

func contains(list []*arena, a *arena) bool {
	for _, x := range list {
		if x == a {
			return true
		}
	}
	return false
}

// stagingArena gives an arena of the pool that neither the current metadata nor anything in
// avoid views and that no clone shares, reset; else a new one. Arenas a clone shares leave the
// pool (the clone keeps them).
func (b *Builder) stagingArena(avoid []*arena) *arena {
	kept := b.pool[:0]
	var found *arena
	for _, a := range b.pool {
		inUse := contains(b.live, a) || contains(avoid, a)
		switch {
		case a.shared() && !inUse:
			a.release()
			continue
		case found == nil && !inUse && !a.shared():
			found = a
		}
		kept = append(kept, a)
	}
	for i := len(kept); i < len(b.pool); i++ {
		b.pool[i] = nil
	}
	b.pool = kept
	if found == nil {
		found = newArena()
		b.pool = append(b.pool, found)
	}
	found.reset()
	return found
}

func (b *Builder) busyError() error {
	return newError(ErrBusy, "builder '%s' is in use by another goroutine (a build, or a reader of its metadata); one builder serves one goroutine at a time", b.name)
}

// build runs one build-like call with the batch staged in a fresh arena.
func (b *Builder) build(c *CommonMetadata, seqLensOut bool,
	call func(cm *C.attn_common_metadata_t, stream C.uintptr_t, out **C.attn_metadata_t) *C.attn_error_t) (*Metadata, error) {
	var md *Metadata
	err := b.use(func() error {
		if !b.state.TryLock() {
			return b.busyError()
		}
		defer b.state.Unlock()
		a := b.stagingArena(nil)
		cm, err := c.toC(a, "common", seqLensOut)
		if err != nil {
			return err
		}
		var out *C.attn_metadata_t
		if err := b.lib.takeError(call(cm, C.uintptr_t(b.stream), &out)); err != nil {
			return err
		}
		a.copyBack()
		b.gen++
		b.live = []*arena{a}
		b.last = out
		md = b.lib.newMetadata(out, false, []*arena{a})
		md.deps = []dep{{b, b.gen}}
		md.fromPlugin = !b.builtIn
		return nil
	})
	return md, err
}

// Build builds the backend's metadata for a batch (vLLM's build(common_prefix_len, common,
// fast_build)). The result belongs to the builder: it is valid until the next build or update
// on it (Clone keeps a copy). A batch that fails validation gives an *Error naming the field
// and the value, and leaves the previous metadata valid.
func (b *Builder) Build(commonPrefixLen int64, c *CommonMetadata, fastBuild bool) (*Metadata, error) {
	return b.build(c, false, func(cm *C.attn_common_metadata_t, s C.uintptr_t, out **C.attn_metadata_t) *C.attn_error_t {
		return C.gattn_build(b.lib.api, b.ptr, C.int64_t(commonPrefixLen), cm, C.int32_t(cBool(fastBuild)), out, s)
	})
}

// BuildForCudagraphCapture is vLLM's build_for_cudagraph_capture: Build(0, c) after checking
// that the builder's level allows the batch in a captured graph (ErrUnsupported otherwise).
// TRITON_ATTN writes 1 into every seq_lens entry, as vLLM does; a Go-slice SeqLens receives
// the written values.
func (b *Builder) BuildForCudagraphCapture(c *CommonMetadata) (*Metadata, error) {
	return b.build(c, true, func(cm *C.attn_common_metadata_t, s C.uintptr_t, out **C.attn_metadata_t) *C.attn_error_t {
		return C.gattn_build_for_cudagraph_capture(b.lib.api, b.ptr, cm, out, s)
	})
}

// BuildForDrafting is vLLM's build_for_drafting(common, draft_index) = Build(0, c, true).
func (b *Builder) BuildForDrafting(c *CommonMetadata, draftIndex int32) (*Metadata, error) {
	return b.build(c, false, func(cm *C.attn_common_metadata_t, s C.uintptr_t, out **C.attn_metadata_t) *C.attn_error_t {
		return C.gattn_build_for_drafting(b.lib.api, b.ptr, cm, C.int32_t(draftIndex), out, s)
	})
}

// UpdateBlockTable is vLLM's update_block_table: metadata equal to md (built by this backend,
// on this builder or another) but for the block table and slot mapping. The result belongs to
// this builder and shares md's other fields, so it is valid only while md is too.
func (b *Builder) UpdateBlockTable(md *Metadata, blockTable, slotMapping Tensor) (*Metadata, error) {
	if md == nil {
		return nil, invalid("metadata is nil")
	}
	var result *Metadata
	err := b.withMetadata(md, func() error {
		a := b.stagingArena(md.inputs)
		bt, err := a.tensor(&blockTable, "block_table", false)
		if err != nil {
			return err
		}
		sm, err := a.tensor(&slotMapping, "slot_mapping", false)
		if err != nil {
			return err
		}
		var out *C.attn_metadata_t
		if err := b.lib.takeError(C.gattn_update_block_table(b.lib.api, b.ptr, md.ptr, bt, sm, &out, C.uintptr_t(b.stream))); err != nil {
			return err
		}
		b.gen++
		b.last = out
		inputs := append(append([]*arena(nil), md.inputs...), a)
		b.live = b.live[:0]
		for _, x := range inputs {
			if contains(b.pool, x) {
				b.live = append(b.live, x)
			}
		}
		result = b.lib.newMetadata(out, false, inputs)
		result.deps = []dep{{b, b.gen}}
		for _, d := range md.deps {
			if d.b != b {
				result.deps = append(result.deps, d)
			}
		}
		result.parents = md.parents
		result.fromPlugin = md.fromPlugin || !b.builtIn
		if md.owned {
			result.parents = append(append([]*Metadata(nil), md.parents...), md)
		}
		return nil
	})
	return result, err
}
