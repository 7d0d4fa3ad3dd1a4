package attn_test

import (
	"runtime"
	"testing"

	"libattn.dev/attn"
)

// Lifetimes: Close is idempotent and makes later uses errors, a build's metadata is valid
// until the next build, owned metadata is valid until its Close and keeps its inputs.

func TestBuilderCloseIsIdempotentAndLaterUsesAreErrors(t *testing.T) {
	b := get(library(t).NewBuilder("FLASH_ATTN", spec(), config(90)))(t)
	c := demoSample().common(t)
	md := get(b.Build(0, c, false))(t)
	ok(t, b.Close())
	ok(t, b.Close())
	_, err := b.Build(0, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "builder 'FLASH_ATTN' is closed")
	_, err = b.CudagraphSupport()
	wantError(t, err, attn.ErrInvalidArgument, "closed")
	_, err = b.ReorderBatchThreshold()
	wantError(t, err, attn.ErrInvalidArgument, "closed")
	_, err = b.SupportsUpdateBlockTable()
	wantError(t, err, attn.ErrInvalidArgument, "closed")
	_, err = b.UseCascadeAttention(attn.NewCascadeQuery(0, nil, 32, 8, 132))
	wantError(t, err, attn.ErrInvalidArgument, "closed")
	_, err = b.BuildForCudagraphCapture(c)
	wantError(t, err, attn.ErrInvalidArgument, "closed")
	_, err = md.Int("num_actual_tokens")
	wantError(t, err, attn.ErrInvalidArgument, "no longer valid", "closed")
	wantError(t, md.Valid(), attn.ErrInvalidArgument, "closed")
	_, err = md.Clone()
	wantError(t, err, attn.ErrInvalidArgument, "closed")
	is(t, "BackendName after Close", b.BackendName(), "FLASH_ATTN")
}

func TestABuildsMetadataIsValidUntilTheNextBuild(t *testing.T) {
	b := newBuilder(t, "FLASH_ATTN", 90)
	s := demoSample()
	first := get(b.Build(0, s.common(t), false))(t)
	ok(t, first.Valid())
	view := get(first.Tensor("seq_lens"))(t)
	other := newSample([]int32{3, 4}, []int32{1, 1}, width)
	second := get(b.Build(0, other.common(t), false))(t)
	for _, use := range []func() error{
		first.Valid,
		func() error { _, err := first.Int("num_actual_tokens"); return err },
		func() error { _, err := first.Get("seq_lens"); return err },
		func() error { _, err := first.Fields(); return err },
		func() error { _, err := first.Field(0); return err },
		func() error { _, err := first.Tensor("seq_lens"); return err },
		func() error { _, err := view.Int32s(); return err },
		func() error { _, err := attn.UnsafeView[int32](view); return err },
		func() error { _, err := first.Clone(); return err },
	} {
		wantError(t, use(), attn.ErrInvalidArgument, "FLASH_ATTN metadata is stale", "builder 'FLASH_ATTN' has built again")
	}
	equal(t, "second seq_lens", i32s(t, second, "seq_lens"), other.seqLens)
	// Close of a build's metadata only retires this handle
	ok(t, second.Close())
	ok(t, second.Close())
	_, err := second.Int("num_actual_tokens")
	wantError(t, err, attn.ErrInvalidArgument, "closed")
	third := get(b.Build(0, s.common(t), false))(t)
	equal(t, "third seq_lens", i32s(t, third, "seq_lens"), s.seqLens)
}

// Clones keep the staged inputs they view while the builder goes on building; owned metadata
// is valid until Close, and Close is idempotent.
func TestClonesKeepTheirInputsAcrossManyBuilds(t *testing.T) {
	b := newBuilder(t, "FLASH_ATTN", 90)
	var clones []*attn.Metadata
	var want [][]int32
	for i := 0; i < 12; i++ {
		ctx := []int32{int32(10 + i), int32(20 + i), int32(30 + i)}
		s := newSample(ctx, []int32{1, 1, int32(1 + i)}, width)
		md := get(b.Build(0, s.common(t), false))(t)
		if i%3 == 0 {
			clones = append(clones, get(md.Clone())(t))
			want = append(want, s.seqLens)
		}
		runtime.GC()
	}
	for i, c := range clones {
		equal(t, "clone seq_lens", i32s(t, c, "seq_lens"), want[i])
		ok(t, c.Close())
		ok(t, c.Close())
		_, err := c.Int32s("seq_lens")
		wantError(t, err, attn.ErrInvalidArgument, "closed")
	}
}

// Owned metadata left for the garbage collector is released by its finalizer.
func TestUnclosedOwnedMetadataIsCollected(t *testing.T) {
	l := library(t)
	s := demoSample()
	for i := 0; i < 200; i++ {
		md := get(l.CommonMetadataUnpadded(s.common(t), 35, 4))(t)
		if i%50 == 0 {
			equal(t, "seq_lens", i32s(t, md, "seq_lens"), []int32{41, 100, 17, 96})
			runtime.GC()
		}
	}
	runtime.GC()
	runtime.GC()
}

// Metadata.ToCommon keeps its source reachable: a batch made from a utility's result stays
// valid without a reference to the result.
func TestToCommonKeepsItsSource(t *testing.T) {
	l := library(t)
	s := demoSample()
	nc := func() *attn.CommonMetadata {
		md := get(l.CommonMetadataUnpadded(s.common(t), 35, 4))(t)
		return get(md.ToCommon())(t)
	}()
	for i := 0; i < 3; i++ {
		runtime.GC()
	}
	b := newBuilder(t, "FLASH_ATTN", 90)
	md := get(b.Build(0, nc, false))(t)
	equal(t, "seq_lens", i32s(t, md, "seq_lens"), []int32{41, 100, 17, 96})
}
