package attn_test

import (
	"errors"
	"fmt"
	"testing"

	"libattn.dev/attn"
)

// Errors: the library's codes and messages come through as *attn.Error values that work with
// errors.Is and errors.As, bad input names the argument and the value, and a failed build
// leaves the previous metadata valid.

func TestErrorIsAGoErrorWithCodeAndMessage(t *testing.T) {
	l := library(t)
	_, err := l.NewBuilder("NO_SUCH_BACKEND", spec(), config(90))
	e := wantError(t, err, attn.ErrNotFound, "NO_SUCH_BACKEND")
	is(t, "Error()", e.Error(), "[not found] "+e.Message)
	if !errors.Is(err, attn.ErrNotFound) || errors.Is(err, attn.ErrInvalidArgument) {
		t.Fatal("errors.Is compares the code")
	}
	wrapped := fmt.Errorf("creating the builder: %w", err)
	if !errors.Is(wrapped, attn.ErrNotFound) {
		t.Fatal("errors.Is through a wrapper")
	}
	var code attn.Code
	if !errors.As(wrapped, &code) || code != attn.ErrNotFound {
		t.Fatalf("errors.As(&code) = %v", code)
	}
	var ae *attn.Error
	if !errors.As(wrapped, &ae) || ae.Message != e.Message {
		t.Fatal("errors.As(&*attn.Error)")
	}
	is(t, "Code.Error", attn.ErrBusy.Error(), "busy")
	is(t, "Code.String", attn.ErrABIMismatch.String(), "ABI mismatch")
}

func TestBadSpecAndConfigNameTheField(t *testing.T) {
	l := library(t)
	s := spec()
	s.BlockSize = 0
	_, err := l.NewBuilder("FLASH_ATTN", s, config(90))
	wantError(t, err, attn.ErrInvalidArgument, "block_size=0")
	s = spec()
	s.DType = attn.KVDtypeAuto
	_, err = l.NewBuilder("FLASH_ATTN", s, config(90))
	e := wantError(t, err, attn.ErrInvalidArgument)
	is(t, "message", e.Message, "kv_cache_spec->dtype=0 is not an ATTN_KV_DTYPE_* value (1..6)")
	_, err = l.BackendCudagraphSupport("FLASH_ATTN", s, config(90))
	wantError(t, err, attn.ErrInvalidArgument)
	c := config(90)
	c.MaxNumSeqs = -3
	_, err = l.NewBuilder("FLASH_ATTN", spec(), c)
	wantError(t, err, attn.ErrInvalidArgument, "max_num_seqs=-3")
	c = config(90)
	c.SpeculativeTokenTree = "[(0,)]\x00"
	_, err = l.NewBuilder("TREE_ATTN", spec(), c)
	wantError(t, err, attn.ErrInvalidArgument, "speculative_token_tree", "NUL byte at 6")
	c = config(90)
	c.SpeculativeTokenTree = "[(0,), (1,), (0, 0)]"
	tree := get(l.NewBuilder("TREE_ATTN", spec(), c))(t)
	ok(t, tree.Close())
	c.SpeculativeTokenTree = "[(0,), ("
	_, err = l.NewBuilder("TREE_ATTN", spec(), c)
	wantError(t, err, attn.ErrInvalidArgument, "speculative_token_tree")
	_, err = l.NewBuilder("FLASH\x00ATTN", spec(), config(90))
	wantError(t, err, attn.ErrInvalidArgument, "backend", "NUL byte at 5")
	c = config(90)
	c.Device = attn.CUDA(0)
	if _, err := l.NewBuilder("FLASH_ATTN", spec(), c); err != nil {
		var e *attn.Error
		if !errors.As(err, &e) || (e.Code != attn.ErrUnsupported && e.Code != attn.ErrCUDA) {
			t.Fatalf("a CUDA builder without a GPU: %v", err)
		}
	}
}

func TestABadBatchNamesTheArgumentAndKeepsTheOldMetadata(t *testing.T) {
	b := newBuilder(t, "FLASH_ATTN", 90)
	good := get(b.Build(0, demoSample().common(t), false))(t)

	s := demoSample()
	s.seqLens[2] = 0
	_, err := b.Build(0, s.common(t), false)
	e := wantError(t, err, attn.ErrInvalidArgument)
	is(t, "message", e.Message, "common->seq_lens[2]=0 is less than its query length 1")
	// the failed build left the previous metadata as it was
	equal(t, "previous seq_lens", i32s(t, good, "seq_lens"), []int32{41, 100, 17, 96, 20})
	s.seqLens[2] = 17

	narrow := newSample(context, query, 6)
	_, err = b.Build(0, narrow.common(t), false)
	e = wantError(t, err, attn.ErrInvalidArgument)
	is(t, "message", e.Message, "common->block_table_tensor has 6 columns but request 1 needs cdiv(seq_lens[1]=100, block_size=16)=7 blocks")

	c := s.common(t)
	seq64 := make([]int64, len(s.seqLens))
	for i, v := range s.seqLens {
		seq64[i] = int64(v)
	}
	c.SeqLens = attn.Slice(seq64)
	_, err = b.Build(0, c, false)
	e = wantError(t, err, attn.ErrInvalidArgument)
	is(t, "message", e.Message, "common->seq_lens has dtype int64, expected int32")

	_, err = b.Build(-1, s.common(t), false)
	wantError(t, err, attn.ErrInvalidArgument, "common_prefix_len=-1")

	c = s.common(t)
	c.NumReqs = 6
	_, err = b.Build(0, c, false)
	e = wantError(t, err, attn.ErrInvalidArgument)
	is(t, "message", e.Message, "common->query_start_loc has shape (6,), expected (7,)")

	c = s.common(t)
	c.SeqLens = attn.Tensor{}
	_, err = b.Build(0, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "seq_lens")
	_, err = b.Build(0, nil, false)
	wantError(t, err, attn.ErrInvalidArgument, "common is nil")

	equal(t, "previous seq_lens", i32s(t, good, "seq_lens"), []int32{41, 100, 17, 96, 20})
}

// The binding's own checks: shapes that do not fit their Go slices never reach libattn.
func TestTheBindingChecksGoSlices(t *testing.T) {
	s := demoSample()
	_, err := attn.NewCommonMetadata(s.queryStartLoc, s.seqLens, s.blockTable, 7, s.slotMapping)
	wantError(t, err, attn.ErrInvalidArgument, "block_table has 320 entries")
	_, err = attn.Matrix([]int32{1, 2, 3}, 0)
	wantError(t, err, attn.ErrInvalidArgument, "width 0")
	_, err = attn.Matrix([]int32{1, 2, 3}, 2)
	wantError(t, err, attn.ErrInvalidArgument, "not a matrix of width 2")
	_, err = attn.Shaped([]int32{1, 2, 3}, 2, 2)
	wantError(t, err, attn.ErrInvalidArgument, "shape (2, 2) has 4 elements but the slice has 3")
	_, err = attn.Shaped([]int32{}, -1)
	wantError(t, err, attn.ErrInvalidArgument, "negative")

	b := newBuilder(t, "FLASH_ATTN", 90)
	c := s.common(t)
	c.SeqLens = attn.Slice(s.seqLens).WithStrides(2) // 5 elements 2 apart need 9
	_, err = b.Build(0, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "common.seq_lens", "needs 36 bytes but its Go slice has 20")
	c.SeqLens = attn.Slice(s.seqLens).WithByteOffset(4)
	_, err = b.Build(0, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "common.seq_lens", "byte offset 4")
	c.SeqLens = attn.Slice(s.seqLens).WithStrides(1, 1)
	_, err = b.Build(0, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "2 strides for 1 dimensions")

	// a strided view inside its slice is fine: a block table whose rows are 80 wide, 64 used
	wide := make([]int32, 5*80)
	for r := 0; r < 5; r++ {
		copy(wide[r*80:r*80+width], s.blockTable[r*width:(r+1)*width])
		wide[r*80+width] = 999 // past the view
	}
	c = s.common(t)
	c.BlockTable = attn.Slice(wide).WithShape(5, width).WithStrides(80, 1)
	md := get(b.Build(0, c, false))(t)
	table := get(md.Tensor("block_table"))(t)
	equal(t, "strides", table.Strides(), []int64{80, 1})
	is(t, "contiguous", table.IsContiguous(), false)
	equal(t, "strided block_table", get(table.Int32s())(t), s.blockTable)
	_, err = attn.UnsafeView[int32](table)
	wantError(t, err, attn.ErrInvalidArgument, "not contiguous")
	c.BlockTable = attn.Slice(wide).WithShape(6, width).WithStrides(80, 1) // reaches row 5
	c.NumReqs = 5
	_, err = b.Build(0, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "common.block_table_tensor", "needs 1856 bytes but its Go slice has 1600")
}
