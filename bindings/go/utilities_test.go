package attn_test

import (
	"testing"

	"libattn.dev/attn"
)

// The batch utilities on vLLM's vectors (shared/vectors of the project, copied into tests/data/vectors) and on the demo's
// batch.

// splitBatch is the setup of split_decodes_and_prefills.json: seq_lens[i] = 10*(i+1),
// query_start_loc the prefix sum of query_lens, num_actual_tokens their sum unless padded; no
// block table or slot mapping (the splits do not read them).
func splitBatch(queryLens, seqLens []int32, paddedTokens int64) *attn.CommonMetadata {
	qsl := []int32{0}
	maxQuery, maxSeq := int64(0), int64(0)
	for i, q := range queryLens {
		qsl = append(qsl, qsl[i]+q)
		if int64(q) > maxQuery {
			maxQuery = int64(q)
		}
	}
	if seqLens == nil {
		for i := range queryLens {
			seqLens = append(seqLens, int32(10*(i+1)))
		}
	}
	for _, s := range seqLens {
		if int64(s) > maxSeq {
			maxSeq = int64(s)
		}
	}
	tokens := int64(qsl[len(qsl)-1])
	if paddedTokens > 0 {
		tokens = paddedTokens
	}
	return &attn.CommonMetadata{
		QueryStartLoc: attn.Slice(qsl), SeqLens: attn.Slice(seqLens), NumReqs: int64(len(queryLens)),
		NumActualTokens: tokens, MaxQueryLen: maxQuery, MaxSeqLen: maxSeq, Causal: true,
	}
}

func TestSplitDecodesAndPrefillsOnVLLMsVectors(t *testing.T) {
	l := library(t)
	// split_decodes_and_prefills.json: -> [num_decodes, num_prefills, num_decode_tokens, num_prefill_tokens]
	cases := []struct {
		queryLens      []int32
		threshold      int32
		requireUniform bool
		padded         int64
		want           [4]int64
	}{
		{[]int32{1, 1, 1}, 1, false, 0, [4]int64{3, 0, 3, 0}},
		{[]int32{1, 2, 1, 3, 2, 1, 2}, 3, false, 0, [4]int64{7, 0, 12, 0}},
		{[]int32{4, 5, 6, 7}, 3, false, 0, [4]int64{0, 4, 0, 22}},
		{[]int32{2, 1, 3, 4, 5, 6, 7, 8}, 4, false, 0, [4]int64{4, 4, 10, 26}},
		{[]int32{1, 1, 1}, 1, true, 0, [4]int64{3, 0, 3, 0}},
		{[]int32{2, 2, 1, 3, 2, 1, 2}, 3, true, 0, [4]int64{2, 5, 4, 9}},
		{[]int32{4, 5, 6, 7}, 3, true, 0, [4]int64{0, 4, 0, 22}},
		{[]int32{2, 2, 2, 4, 5, 6, 7, 8}, 4, true, 0, [4]int64{3, 5, 6, 30}},
		{[]int32{2, 1, 2, 4, 5, 6, 7, 8}, 4, true, 0, [4]int64{1, 7, 2, 33}},
		{[]int32{2, 2, 2, 0}, 3, true, 8, [4]int64{4, 0, 8, 0}},
	}
	for i, c := range cases {
		s := get(l.SplitDecodesAndPrefills(splitBatch(c.queryLens, nil, c.padded), c.threshold, c.requireUniform))(t)
		got := [4]int64{s.NumDecodes, s.NumPrefills, s.NumDecodeTokens, s.NumPrefillTokens}
		if got != c.want || s.NumExtends != 0 || s.NumExtendTokens != 0 {
			t.Fatalf("case %d %v: %+v, want %v", i, c.queryLens, s, c.want)
		}
	}
	// a padded uniform batch whose token count is not 4 * 2: vLLM 0.33 dropped the "tokens not
	// padded correctly" assertion, it is all decodes
	s := get(l.SplitDecodesAndPrefills(splitBatch([]int32{2, 2, 2, 0}, nil, 7), 3, true))(t)
	if got := [4]int64{s.NumDecodes, s.NumPrefills, s.NumDecodeTokens, s.NumPrefillTokens}; got != [4]int64{4, 0, 7, 0} {
		t.Fatalf("padded uniform batch: %+v", s)
	}
	_, err := l.SplitDecodesAndPrefills(nil, 1, false)
	wantError(t, err, attn.ErrInvalidArgument, "common is nil")
}

func TestSplitDecodesPrefillsAndExtendsOnVLLMsVector(t *testing.T) {
	l := library(t)
	c := splitBatch([]int32{1, 2, 4, 5, 6}, []int32{10, 11, 20, 5, 6}, 0)
	s := get(l.SplitDecodesPrefillsAndExtends(c, 3))(t)
	got := [6]int64{s.NumDecodes, s.NumExtends, s.NumPrefills, s.NumDecodeTokens, s.NumExtendTokens, s.NumPrefillTokens}
	is(t, "split", got, [6]int64{2, 1, 2, 3, 4, 11})
}

func TestLocalAttentionVirtualBatchesOnVLLMsExample(t *testing.T) {
	l := library(t)
	// local_attention_virtual_batches.json: chunk 4, block 2
	const chunk, block = 4, 2
	queryLens := []int32{4, 10, 5}
	seqLens := []int32{6, 17, 9}
	table := make([]int32, 30)
	for i := range table {
		table[i] = int32(i)
	}
	qsl := []int32{0}
	for i, q := range queryLens {
		qsl = append(qsl, qsl[i]+q)
	}
	c := get(attn.NewCommonMetadata(qsl, seqLens, table, 10, make([]int64, 19)))(t)
	is(t, "max_query_len", c.MaxQueryLen, int64(10))
	v := get(l.LocalAttentionNumVirtualBatches(chunk, c))(t)
	is(t, "virtual batches", v, int64(8))
	out := attn.NewLocalAttentionSlices(int(v), chunk/block)
	outputs := get(out.Out())(t)
	md := get(l.MakeLocalAttentionVirtualBatches(chunk, c, block, outputs, 0))(t)
	defer md.Close()
	is(t, "kind", md.Kind(), "common")
	is(t, "owned", md.Owned(), true)

	wantQSL := []int32{0, 2, 4, 5, 9, 13, 14, 18, 19}
	wantSeq := []int32{4, 2, 4, 4, 4, 1, 4, 1} // seqlens_k_local
	wantComputed := []int32{2, 0, 3, 0, 0, 0, 0, 0}
	wantTable := []int32{0, 1, 2, 3, 12, 13, 14, 15, 16, 17, 18, 19, 22, 23, 24, 25}
	kStarts := []int32{0, 4, 4, 8, 12, 16, 4, 8} // k_seqstarts_absolute
	wantBlockStart := make([]int32, len(kStarts))
	for i, k := range kStarts {
		wantBlockStart[i] = k / block
	}
	// the Go slices received the outputs
	equal(t, "query_start_loc", out.QueryStartLoc, wantQSL)
	equal(t, "query_start_loc_cpu", out.QueryStartLocCPU, wantQSL)
	equal(t, "seq_lens", out.SeqLens, wantSeq)
	equal(t, "seq_lens_cpu", out.SeqLensCPU, wantSeq)
	equal(t, "num_computed_tokens_cpu", out.NumComputedTokensCPU, wantComputed)
	equal(t, "block_table", out.BlockTable, wantTable)
	equal(t, "virtual_req", out.VirtualReq, []int32{0, 0, 1, 1, 1, 1, 2, 2})
	equal(t, "virtual_block_start", out.VirtualBlockStart, wantBlockStart)

	// and the result is the new batch
	nc := get(md.ToCommon())(t)
	is(t, "num_reqs", nc.NumReqs, int64(8))
	is(t, "max_query_len", nc.MaxQueryLen, int64(4))
	is(t, "max_seq_len", nc.MaxSeqLen, int64(4))
	is(t, "num_actual_tokens", nc.NumActualTokens, int64(19))
	equal(t, "result seq_lens", i32s(t, md, "seq_lens"), wantSeq)
	equal(t, "result query_start_loc", i32s(t, md, "query_start_loc"), wantQSL)
	equal(t, "result block_table", i32s(t, md, "block_table_tensor"), wantTable)

	// the remap applied to the same table gives the local table again
	remapped := make([]int32, len(wantTable))
	ok(t, l.RemapLocalBlockTable(get(attn.Matrix(table, 10))(t), attn.Slice(out.VirtualReq), attn.Slice(out.VirtualBlockStart),
		v, get(attn.Matrix(remapped, chunk/block))(t), 0))
	equal(t, "remapped", remapped, wantTable)

	// a chunk that is no multiple of the block size
	_, err := l.MakeLocalAttentionVirtualBatches(3, c, block, outputs, 0)
	wantError(t, err, attn.ErrInvalidArgument, "attn_chunk_size 3 is not divisible by block_size 2")
}

func TestKVSharingFastPrefillOnVLLMsVector(t *testing.T) {
	l := library(t)
	// kv_sharing_fast_prefill.json
	seqLens := []int32{41, 31, 40}
	qsl := []int32{0, 15, 20, 28}
	table := make([]int32, 3*3)
	for i := range table {
		table[i] = int32(i + 1)
	}
	c := get(attn.NewCommonMetadata(qsl, seqLens, table, 3, make([]int64, 28)))(t)
	c.LogitsIndicesPadded = attn.Slice([]int32{14, 18, 19, 27, 99})
	c.NumLogitsIndices = 4
	outQSL, outQSLCPU := make([]int32, 4), make([]int32, 4)
	md := get(l.MakeKVSharingFastPrefillCommonAttnMetadata(c, attn.Tensor{}, attn.Slice(outQSL), attn.Slice(outQSLCPU), 0))(t)
	defer md.Close()
	equal(t, "query_start_loc", outQSL, []int32{0, 1, 3, 4})
	equal(t, "query_start_loc_cpu", outQSLCPU, []int32{0, 1, 3, 4})
	nc := get(md.ToCommon())(t)
	is(t, "num_actual_tokens", nc.NumActualTokens, int64(4))
	is(t, "max_query_len", nc.MaxQueryLen, int64(2))
	equal(t, "seq_lens", i32s(t, md, "seq_lens"), seqLens)
	equal(t, "result query_start_loc", i32s(t, md, "query_start_loc"), []int32{0, 1, 3, 4})
}

// ABI 1.7: c itself where vLLM returns its argument, else the ABI 1.0 function's batch.
func TestKVSharingFastPrefillEx(t *testing.T) {
	l := library(t)
	seqLens := []int32{41, 31, 40}
	qsl := []int32{0, 15, 20, 28}
	table := make([]int32, 3*3)
	for i := range table {
		table[i] = int32(i + 1)
	}
	c := get(attn.NewCommonMetadata(qsl, seqLens, table, 3, make([]int64, 28)))(t)
	outQSL, outQSLCPU := []int32{-9, -9, -9, -9}, []int32{-9, -9, -9, -9}
	// not armed (no logits indices): the same batch, no metadata, the outputs untouched
	same, md, err := l.MakeKVSharingFastPrefillCommonAttnMetadataEx(c, attn.Tensor{}, attn.Slice(outQSL), attn.Slice(outQSLCPU), 0)
	ok(t, err)
	if same != c || md != nil {
		t.Fatalf("pass-through: got (%p, %v), want (%p, nil)", same, md, c)
	}
	equal(t, "untouched", outQSLCPU, []int32{-9, -9, -9, -9})
	// decodes of an armed step: the same batch too
	d := get(attn.NewCommonMetadata([]int32{0, 1, 2, 3}, seqLens, table, 3, make([]int64, 3)))(t)
	d.LogitsIndicesPadded = attn.Slice([]int32{0, 1, 2})
	d.NumLogitsIndices = 3
	same, md, err = l.MakeKVSharingFastPrefillCommonAttnMetadataEx(d, attn.Tensor{}, attn.Slice(outQSL), attn.Slice(outQSLCPU), 0)
	ok(t, err)
	if same != d || md != nil {
		t.Fatalf("armed decodes: got (%p, %v), want (%p, nil)", same, md, d)
	}
	// armed: kv_sharing_fast_prefill.json's answer
	c.LogitsIndicesPadded = attn.Slice([]int32{14, 18, 19, 27, 99})
	c.NumLogitsIndices = 4
	nc, md, err := l.MakeKVSharingFastPrefillCommonAttnMetadataEx(c, attn.Tensor{}, attn.Slice(outQSL), attn.Slice(outQSLCPU), 0)
	ok(t, err)
	if nc == c || md == nil {
		t.Fatal("an armed batch must give a new batch and its metadata")
	}
	defer md.Close()
	equal(t, "query_start_loc_cpu", outQSLCPU, []int32{0, 1, 3, 4})
	is(t, "num_actual_tokens", nc.NumActualTokens, int64(4))
	is(t, "max_query_len", nc.MaxQueryLen, int64(2))
	b := newBuilder(t, "FLASH_ATTN", 90)
	built := get(b.Build(0, nc, false))(t)
	equal(t, "seq_lens", i32s(t, built, "seq_lens"), seqLens)
	equal(t, "built query_start_loc", i32s(t, built, "query_start_loc"), []int32{0, 1, 3, 4})
	// bad input, named
	c.LogitsIndicesPadded = attn.Tensor{}
	c.NumLogitsIndices = 0
	c.MaxQueryLen = -1
	_, _, err = l.MakeKVSharingFastPrefillCommonAttnMetadataEx(c, attn.Tensor{}, attn.Slice(outQSL), attn.Slice(outQSLCPU), 0)
	wantError(t, err, attn.ErrInvalidArgument, "common->max_query_len=-1 is negative")
}

func TestUbatchSlicingOnVLLMsVectors(t *testing.T) {
	l := library(t)
	// ubatch_slicing.json: slice_query_start_locs
	qsl := []int32{0, 5, 12, 20, 35, 50}
	cases := []struct {
		start, stop int64
		want        []int32
	}{
		{1, 3, []int32{0, 7, 15}},
		{0, 2, []int32{0, 5, 12}},
		{3, 5, []int32{0, 15, 30}},
		{2, 3, []int32{0, 8}},
		{0, 5, []int32{0, 5, 12, 20, 35, 50}},
		{4, 5, []int32{0, 15}},
	}
	for _, c := range cases {
		out := make([]int32, c.stop-c.start+1)
		ok(t, l.SliceQueryStartLocs(attn.Slice(qsl), c.start, c.stop, attn.Slice(out), 0))
		equal(t, "slice", out, c.want)
	}
	err := l.SliceQueryStartLocs(attn.Slice(qsl), 3, 2, attn.Slice(make([]int32, 3)), 0)
	wantError(t, err, attn.ErrInvalidArgument)

	// metadata_slices[0]: requests [1, 3), tokens [1, 7)
	batch := func(seq, q []int32) *attn.CommonMetadata {
		s := newSample(make([]int32, len(seq)), q, 4)
		for i := range seq {
			s.seqLens[i] = seq[i]
		}
		return s.common(t)
	}
	c := batch([]int32{32, 40, 48, 56}, []int32{1, 1, 5, 5})
	out := attn.NewUbatchOut(2)
	md := get(l.MakeMetadataWithSlice(c, attn.UbatchSlice{RequestStart: 1, RequestStop: 3, TokenStart: 1, TokenStop: 7}, out, 0))(t)
	nc := get(md.ToCommon())(t)
	is(t, "num_reqs", nc.NumReqs, int64(2))
	is(t, "num_actual_tokens", nc.NumActualTokens, int64(6))
	is(t, "max_query_len", nc.MaxQueryLen, int64(5))
	equal(t, "query_start_loc", i32s(t, md, "query_start_loc"), []int32{0, 1, 6})
	equal(t, "seq_lens", i32s(t, md, "seq_lens"), []int32{40, 48})
	ok(t, md.Close())

	// metadata_slices[1] and [2]: a request split across two micro-batches
	for _, c := range []struct {
		split                int64
		firstReqs, secondReq int64
	}{{12, 2, 1}, {4, 1, 2}} {
		slices, padded := func() ([]attn.UbatchSlice, []attn.UbatchSlice) {
			s, p, err := l.MaybeCreateUbatchSlices([]int32{8, 8}, 16, 2, 2, c.split)
			ok(t, err)
			return s, p
		}()
		is(t, "slices", len(slices), 2)
		is(t, "padded", len(padded), 2)
		is(t, "first reqs", slices[0].RequestStop-slices[0].RequestStart, c.firstReqs)
		is(t, "second reqs", slices[1].RequestStop-slices[1].RequestStart, c.secondReq)
		is(t, "token split", slices[0].TokenStop, c.split)
		whole := batch([]int32{32, 40}, []int32{8, 8})
		parts := get(l.SplitAttnMetadata(whole, slices, []attn.UbatchOut{attn.NewUbatchOut(2), attn.NewUbatchOut(2)}, 0))(t)
		is(t, "parts", len(parts), 2)
		first, second := i32s(t, parts[0], "seq_lens"), i32s(t, parts[1], "seq_lens")
		if c.split == 12 {
			// request 1's first part: context 32 + the 4 tokens in the first chunk
			equal(t, "first seq_lens", first, []int32{32, 36})
			equal(t, "second seq_lens", second, []int32{40}) // the full seq_len
		} else {
			equal(t, "first seq_lens", first, []int32{28})
			equal(t, "second seq_lens", second, []int32{32, 40})
		}
		for _, p := range parts {
			ok(t, p.Close())
		}
	}
	_, _, err = l.MaybeCreateUbatchSlices([]int32{8, 8}, 16, 2, 0, 0)
	wantError(t, err, attn.ErrInvalidArgument)
	_, err = l.SplitAttnMetadata(c, make([]attn.UbatchSlice, 2), make([]attn.UbatchOut, 1), 0)
	wantError(t, err, attn.ErrInvalidArgument, "2 slices but 1 output sets")
}

func TestReorderAndPrefillChunks(t *testing.T) {
	l := library(t)
	// decodes (<= 1 token with context), an extend (more, with context), prefills (no context)
	scheduled := []int32{5, 1, 7, 1, 3, 1}
	computed := []int32{0, 10, 4, 20, 0, 30}
	swaps := get(l.ReorderBatchToSplitDecodesAndPrefills(scheduled, computed, 1))(t)
	if len(swaps) == 0 {
		t.Fatal("an unordered batch needs swaps")
	}
	region := func(i int) int {
		switch {
		case scheduled[i] <= 1 && computed[i] > 0:
			return 0
		case computed[i] > 0:
			return 1
		}
		return 2
	}
	order := []int{0, 1, 2, 3, 4, 5}
	for _, s := range swaps {
		order[s.Src], order[s.Dst] = order[s.Dst], order[s.Src]
	}
	for i := 1; i < len(order); i++ {
		if region(order[i-1]) > region(order[i]) {
			t.Fatalf("after %v the batch is %v", swaps, order)
		}
	}
	ordered := make([]int32, 6)
	orderedComputed := make([]int32, 6)
	for i, r := range order {
		ordered[i], orderedComputed[i] = scheduled[r], computed[r]
	}
	is(t, "swaps of an ordered batch", len(get(l.ReorderBatchToSplitDecodesAndPrefills(ordered, orderedComputed, 1))(t)), 0)
	_, err := l.ReorderBatchToSplitDecodesAndPrefills(scheduled, computed[:2], 1)
	wantError(t, err, attn.ErrInvalidArgument, "num_computed_tokens has 2")
	is(t, "empty batch", len(get(l.ReorderBatchToSplitDecodesAndPrefills(nil, nil, 1))(t)), 0)

	chunks := get(l.SplitPrefillChunks([]int32{3, 4, 5, 2}, 8, 10))(t)
	equal(t, "chunks", chunks, []attn.Range{{10, 12}, {12, 14}})
	_, err = l.SplitPrefillChunks([]int32{3, 9}, 8, 0)
	wantError(t, err, attn.ErrInvalidArgument, "9")
}

func TestDCPReshapeSlotMappingFlashinferAndConv1d(t *testing.T) {
	l := library(t)
	// DCP: base = seq // interleave // size * interleave; rank r gets base + clip(rem - r*interleave, 0, interleave)
	all := make([]int32, 4)
	ok(t, l.GetDCPLocalSeqLens(attn.Slice([]int32{10, 7}), 2, attn.DCPAllRanks, 1, get(attn.Matrix(all, 2))(t), 0))
	equal(t, "every rank", all, []int32{5, 5, 4, 3})
	rank1 := make([]int32, 2)
	ok(t, l.GetDCPLocalSeqLens(attn.Slice([]int32{10, 7}), 2, 1, 1, attn.Slice(rank1), 0))
	equal(t, "rank 1", rank1, []int32{5, 3})
	err := l.GetDCPLocalSeqLens(attn.Slice([]int32{10, 7}), 0, 0, 1, attn.Slice(rank1), 0)
	wantError(t, err, attn.ErrInvalidArgument)

	// reshape: (6, 2, 4) -> (3, 2, 2, 4), the same memory
	q := get(attn.Shaped(make([]float32, 48), 6, 2, 4))(t)
	r := get(l.ReshapeQueryForSpecDecode(q, 3))(t)
	equal(t, "shape", r.Shape(), []int64{3, 2, 2, 4})
	equal(t, "strides", r.Strides(), []int64{16, 8, 4, 1})
	is(t, "Go memory", r.IsGoMemory(), true)
	_, err = l.ReshapeQueryForSpecDecode(q, 4)
	wantError(t, err, attn.ErrInvalidArgument, "total_tokens=6 is not divisible by batch_size=4")

	// slot mapping of the demo batch from positions, padded to 60 entries
	s := demoSample()
	var positions []int64
	for r := range context {
		for p := context[r]; p < context[r]+query[r]; p++ {
			positions = append(positions, int64(p))
		}
	}
	slots := make([]int64, 60)
	args := attn.NewSlotMappingArgs()
	is(t, "default DCP size", args.DCPWorldSize, int32(1))
	args.QueryStartLoc = attn.Slice(s.queryStartLoc)
	args.NumReqs = 5
	args.Positions = attn.Slice(positions)
	args.BlockTable = get(attn.Matrix(s.blockTable, width))(t)
	args.BlockSize = blockSize
	args.SlotMapping = attn.Slice(slots)
	ok(t, l.ComputeSlotMapping(args, 0))
	equal(t, "slot_mapping", slots[:55], s.slotMapping)
	equal(t, "padding", slots[55:], []int64{attn.PadSlotID, attn.PadSlotID, attn.PadSlotID, attn.PadSlotID, attn.PadSlotID})
	args.BlockSize = 0
	wantError(t, l.ComputeSlotMapping(args, 0), attn.ErrInvalidArgument, "block_size")

	// FlashInfer's paged KV layout of the demo batch: pages 1..20 in order
	indptr, indices, lastPage := make([]int32, 6), make([]int32, 20), make([]int32, 5)
	pages := get(l.ComputeFlashinferKVMetadata(attn.Slice(s.seqLens), attn.Tensor{}, get(attn.Matrix(s.blockTable, width))(t),
		blockSize, attn.Slice(indptr), attn.Slice(indices), attn.Slice(lastPage), 0))(t)
	is(t, "pages", pages, int64(20))
	equal(t, "indptr", indptr, []int32{0, 3, 10, 12, 18, 20})
	equal(t, "last_page_len", lastPage, []int32{9, 4, 1, 16, 4})
	for i, v := range indices {
		is(t, "indices", v, int32(i+1))
	}
	_, err = l.ComputeFlashinferKVMetadata(attn.Slice(s.seqLens), attn.Tensor{}, get(attn.Matrix(s.blockTable, width))(t),
		blockSize, attn.Slice(indptr), attn.Slice(indices[:10]), attn.Slice(lastPage), 0)
	wantError(t, err, attn.ErrInvalidArgument)

	// causal conv1d: prefills of 20 and 5 tokens -> cdiv(., 8) = 3 and 1 programs
	qslP := []int32{0, 20, 25}
	batchPtr, offsets, nums := make([]int32, 2048), make([]int32, 2048), make([]int32, 2)
	info := get(l.ComputeCausalConv1dMetadata(attn.Slice(qslP), attn.Slice(qslP), attn.Slice(batchPtr), attn.Slice(offsets), attn.Slice(nums), 0))(t)
	is(t, "info", info, attn.Conv1dInfo{Tot: 4, NumPrograms: 2048})
	equal(t, "nums", nums, []int32{3, 1})
	equal(t, "batch_ptr", batchPtr[:5], []int32{0, 0, 0, 1, int32(attn.PadSlotID)})
	equal(t, "token_chunk_offset_ptr", offsets[:5], []int32{0, 1, 2, 0, int32(attn.PadSlotID)})
	_, err = l.ComputeCausalConv1dMetadata(attn.Slice(qslP), attn.Slice(qslP), attn.Slice(batchPtr[:100]), attn.Slice(offsets), attn.Slice(nums), 0)
	wantError(t, err, attn.ErrInvalidArgument)
}

func TestUnpaddedBatchBuilds(t *testing.T) {
	l := library(t)
	s := demoSample()
	md := get(l.CommonMetadataUnpadded(s.common(t), 35, 4))(t)
	defer md.Close()
	is(t, "kind", md.Kind(), "common")
	nc := get(md.ToCommon())(t)
	is(t, "num_reqs", nc.NumReqs, int64(4))
	is(t, "num_actual_tokens", nc.NumActualTokens, int64(35))
	equal(t, "query_start_loc", i32s(t, md, "query_start_loc"), []int32{0, 1, 2, 3, 35})
	equal(t, "seq_lens", i32s(t, md, "seq_lens"), []int32{41, 100, 17, 96})
	// the result is a build's input (its tensors view md's memory, which md keeps)
	b := newBuilder(t, "FLASH_ATTN", 90)
	built := get(b.Build(0, nc, false))(t)
	is(t, "num_actual_tokens", integer(t, built, "num_actual_tokens"), 35)
	equal(t, "seq_lens", i32s(t, built, "seq_lens"), []int32{41, 100, 17, 96})
	_, err := l.CommonMetadataUnpadded(s.common(t), 56, 4)
	wantError(t, err, attn.ErrInvalidArgument)
	// ToCommon refuses a build's metadata
	_, err = built.ToCommon()
	wantError(t, err, attn.ErrInvalidArgument)
}
