package attn

/*
#include "capi.h"
*/
import "C"

import (
	"errors"
	"unsafe"
)

// BuildGroups is attn_build_groups (ABI 1.7): every builder's Build of one batch in one call,
// what a hybrid model's runner does each step for its KV cache groups (full attention, sliding
// window, Mamba, GDN, ...), the batch staged, converted and validated once. Result i is what
// builders[i].Build(commonPrefixLens[i], c, fastBuild) would return, and belongs to
// builders[i] as that build's would (valid until its next build, update or Close; every
// builder's earlier metadata is stale). commonPrefixLens is nil (0 for each) or one value per
// builder. The builders must be distinct, of one Library and share one stream (SetStream):
// device work is enqueued there in builder order.
//
// Errors name builders[i]: the binding's checks (nil, closed, given twice, another library or
// stream), ErrBusy when one is in use (none is then held), and libattn's ("builders[i]: " and
// the message that builder's Build would give). No result is returned on failure. A refused
// batch leaves every builder's previous metadata valid; when builders[i] fails during its build
// (a backend's own check, a CUDA error) builders[0..i) have been rebuilt and their previous
// metadata is stale (docs/architecture.md, "Grouped builds").
func BuildGroups(builders []*Builder, commonPrefixLens []int64, c *CommonMetadata, fastBuild bool) ([]*Metadata, error) {
	n := len(builders)
	if n == 0 {
		return nil, invalid("builders is empty; pass at least one builder")
	}
	for i, b := range builders {
		if b == nil {
			return nil, invalid("builders[%d] is nil", i)
		}
		for j := 0; j < i; j++ {
			if builders[j] == b {
				return nil, invalid("builders[%d] is builders[%d]; a builder may appear once (it holds one result)", i, j)
			}
		}
		if b.lib != builders[0].lib {
			return nil, invalid("builders[%d] comes from libattn %s, builders[0] from %s", i, b.lib.path, builders[0].lib.path)
		}
	}
	if commonPrefixLens != nil && len(commonPrefixLens) != n {
		return nil, invalid("commonPrefixLens has %d entries for %d builders", len(commonPrefixLens), n)
	}
	l := builders[0].lib
	if err := l.hasSince("attn_build_groups", "1.7"); err != nil {
		return nil, err
	}

	// Hold every builder as Build holds one, without waiting: a builder that is closing or
	// building is reported at once, and none stays held.
	held := 0
	defer func() {
		for k := held - 1; k >= 0; k-- {
			builders[k].state.Unlock()
			builders[k].life.RUnlock()
		}
	}()
	for i, b := range builders {
		if !b.life.TryRLock() { // Close runs
			return nil, invalid("builders[%d]: builder '%s' is closed", i, b.name)
		}
		if b.closed {
			b.life.RUnlock()
			return nil, invalid("builders[%d]: %s", i, b.closedError().(*Error).Message)
		}
		if !b.state.TryLock() {
			b.life.RUnlock()
			return nil, newError(ErrBusy, "builders[%d]: %s", i, b.busyError().(*Error).Message)
		}
		held++
		if b.stream != builders[0].stream {
			return nil, invalid("builders[%d] builds on stream %#x but builders[0] on %#x; one call enqueues on one stream",
				i, uintptr(b.stream), uintptr(builders[0].stream))
		}
	}

	// The batch is staged once, in an arena of builders[0]; every result may view it, so every
	// builder keeps a reference to it (a shared arena is never reset) while its metadata does.
	a := builders[0].stagingArena(nil)
	cm, err := c.toC(a, "common", false)
	if err != nil {
		return nil, err
	}
	ptrs := make([]*C.attn_builder_t, n)
	for i, b := range builders {
		ptrs[i] = b.ptr
	}
	var prefixes *C.int64_t
	if commonPrefixLens != nil {
		prefixes = (*C.int64_t)(unsafe.Pointer(&commonPrefixLens[0]))
	}
	out := make([]*C.attn_metadata_t, n)
	err = l.takeError(C.gattn_build_groups(l.api, &ptrs[0], C.size_t(n), prefixes, cm, C.int32_t(cBool(fastBuild)),
		&out[0], C.uintptr_t(builders[0].stream)))
	if err != nil {
		for _, b := range builders {
			if b.retired() {
				b.gen++ // rebuilt before the failing builder: its metadata is stale
			}
		}
		return nil, err
	}
	a.copyBack()
	mds := make([]*Metadata, n)
	for i, b := range builders {
		if i > 0 {
			b.pool = append(b.pool, a.retain())
		}
		b.gen++
		b.live = []*arena{a}
		b.last = out[i]
		md := l.newMetadata(out[i], false, []*arena{a})
		md.deps = []dep{{b, b.gen}}
		md.fromPlugin = !b.builtIn
		mds[i] = md
	}
	return mds, nil
}

// retired tells whether libattn has rebuilt the builder since its latest result without handing
// out a new one (attn_build_groups, when a later builder of the group fails during its build):
// the latest result then reads as stale in libattn. A live result answers an out-of-range field
// index with ErrNotFound, a stale one with ErrInvalidArgument. The caller holds the builder.
func (b *Builder) retired() bool {
	if b.last == nil {
		return false // no result yet, none to go stale
	}
	var f C.attn_field_t
	err := b.lib.takeError(C.gattn_metadata_field(b.lib.api, b.last, C.size_t(^uint(0)), &f))
	var e *Error
	return !(errors.As(err, &e) && e.Code == ErrNotFound)
}
