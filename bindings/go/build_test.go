package attn_test

import (
	"math"
	"runtime"
	"testing"
	"unsafe"

	"libattn.dev/attn"
)

// Builds of the C demo's batch, checked against values computed here: FLASH_ATTN's fields,
// cascade, clones, update_block_table, capture, drafting, the cascade heuristic, the other
// backends and vLLM's wrappers, zero-copy inputs and a caller workspace.

// expectedBatch is query_start_loc, seq_lens and slot_mapping of the demo's batch, computed
// without newSample.
func expectedBatch() ([]int32, []int32, []int64) {
	qsl := []int32{0, 1, 2, 3, 35, 55}
	seq := []int32{41, 100, 17, 96, 20}
	// blocks: req0 1..3, req1 4..10, req2 11..12, req3 13..18, req4 19..20
	firstBlock := []int64{1, 4, 11, 13, 19}
	var slots []int64
	for r := range context {
		for p := context[r]; p < context[r]+query[r]; p++ {
			slots = append(slots, (firstBlock[r]+int64(p/blockSize))*16+int64(p%blockSize))
		}
	}
	return qsl, seq, slots
}

func TestFlashAttnBuildHasTheValuesComputedByHand(t *testing.T) {
	s := demoSample()
	qsl, seq, slots := expectedBatch()
	is(t, "tokens", len(s.slotMapping), 55)
	equal(t, "first slots", slots[:4], []int64{56, 163, 192, 272}) // the C demo's
	b := newBuilder(t, "FLASH_ATTN", 90)
	c := s.common(t)
	is(t, "counts", [4]int64{c.NumReqs, c.NumActualTokens, c.MaxQueryLen, c.MaxSeqLen}, [4]int64{5, 55, 32, 100})
	md := get(b.Build(0, c, false))(t)
	is(t, "Kind", md.Kind(), "FLASH_ATTN")
	is(t, "Len", md.Len(), 36) // vLLM 0.33's fields and libattn's scheduler inputs; no cascade
	is(t, "Owned", md.Owned(), false)
	is(t, "num_actual_tokens", integer(t, md, "num_actual_tokens"), 55)
	is(t, "max_query_len", integer(t, md, "max_query_len"), 32)
	is(t, "max_seq_len", integer(t, md, "max_seq_len"), 100)
	equal(t, "query_start_loc", i32s(t, md, "query_start_loc"), qsl)
	equal(t, "seq_lens", i32s(t, md, "seq_lens"), seq)
	table := get(md.Tensor("block_table"))(t)
	equal(t, "block_table shape", table.Shape(), []int64{5, width})
	equal(t, "block_table strides", table.Strides(), []int64{width, 1})
	is(t, "block_table dtype", table.DType(), attn.Int32)
	is(t, "block_table device", table.Device(), attn.CPU)
	is(t, "contiguous", table.IsContiguous(), true)
	rows := get(table.Int32s())(t)
	equal(t, "row 0", rows[:4], []int32{1, 2, 3, 0})
	equal(t, "row 1", rows[width:width+8], []int32{4, 5, 6, 7, 8, 9, 10, 0})
	equal(t, "block_table", rows, s.blockTable)
	sm := get(md.Tensor("slot_mapping"))(t)
	is(t, "slot_mapping dtype", sm.DType(), attn.Int64)
	equal(t, "slot_mapping", get(sm.Int64s())(t), slots)
	_, err := sm.Int32s()
	wantError(t, err, attn.ErrInvalidArgument, "slot_mapping", "int64")
	is(t, "String", sm.String(), "tensor (55,) int64 on cpu")
	if !boolean(t, md, "causal") || !boolean(t, md, "aot_schedule") {
		t.Fatal("causal, aot_schedule")
	}
	// vLLM 0.33 removed cascade attention: no cascade fields without a common prefix
	for _, gone := range []string{"use_cascade", "common_prefix_len", "cu_prefix_query_lens", "suffix_kv_lens"} {
		_, err := md.Get(gone)
		wantError(t, err, attn.ErrNotFound, gone)
	}
	is(t, "num_decode_reqs", integer(t, md, "num_decode_reqs"), 0)
	for _, none := range []string{"dcp_context_kv_lens", "scheduler_metadata"} {
		if !isNone(t, md, none) {
			t.Fatalf("%s is not None", none)
		}
		if v := get(md.Tensor(none))(t); v != nil {
			t.Fatalf("Tensor(%s) = %v, want nil", none, v)
		}
	}
	buffer := get(md.Tensor("scheduler_metadata_buffer"))(t)
	equal(t, "scheduler_metadata_buffer shape", buffer.Shape(), []int64{1 + 256*4})
	for i, v := range get(buffer.Int32s())(t) {
		if v != 0 {
			t.Fatalf("scheduler_metadata_buffer[%d] = %d", i, v)
		}
	}
	is(t, "scheduler_num_heads_q", integer(t, md, "scheduler_num_heads_q"), 32)
	is(t, "scheduler_num_heads_kv", integer(t, md, "scheduler_num_heads_kv"), 8)
	is(t, "scheduler_max_seqlen_k", integer(t, md, "scheduler_max_seqlen_k"), 100)

	// fields by index agree with fields by name
	fields := get(md.Fields())(t)
	is(t, "fields", len(fields), 36)
	is(t, "fields[0]", fields[0].Name, "num_actual_tokens")
	is(t, "fields[0] kind", fields[0].Kind, attn.FieldInt)
	is(t, "fields[0] value", fields[0].Int, int64(55))
	is(t, "fields[0] String", fields[0].String(), "55")
	for i, f := range fields {
		byIndex := get(md.Field(i))(t)
		byName := get(md.Get(f.Name))(t)
		if byIndex.Name != f.Name || byName.Kind != f.Kind || byName.Int != f.Int || byName.Float != f.Float {
			t.Fatalf("field %d: %+v, %+v, %+v", i, f, byIndex, byName)
		}
		if f.Kind == attn.FieldTensor && f.Tensor.Data() != byName.Tensor.Data() {
			t.Fatalf("field %s views two addresses", f.Name)
		}
	}
	_, err = md.Field(48)
	wantError(t, err, attn.ErrNotFound)
	_, err = md.Field(-1)
	wantError(t, err, attn.ErrNotFound)
	_, err = md.Get("no_such_field")
	wantError(t, err, attn.ErrNotFound, "no_such_field", "FLASH_ATTN")
	_, err = md.Int("seq_lens")
	wantError(t, err, attn.ErrInvalidArgument)
	_, err = md.Tensor("max_seq_len")
	wantError(t, err, attn.ErrInvalidArgument)
	_, err = md.Bool("max_seq_len")
	wantError(t, err, attn.ErrInvalidArgument, "max_seq_len", "not a bool")
	_, err = md.Int32s("dcp_context_kv_lens")
	wantError(t, err, attn.ErrInvalidArgument, "dcp_context_kv_lens", "None")
	_, err = md.Get("seq\x00lens")
	wantError(t, err, attn.ErrInvalidArgument, "NUL byte")

	// an unsafe view reads the same memory without a copy
	view := get(attn.UnsafeView[int32](get(md.Tensor("seq_lens"))(t)))(t)
	equal(t, "UnsafeView(seq_lens)", view, seq)
}

func TestCascadeAndACloneThatOutlivesTheRebuildAndTheBuilder(t *testing.T) {
	s := demoSample()
	c := s.common(t)
	b := get(library(t).NewBuilder("FLASH_ATTN", spec(), config(90)))(t)
	suffix := []int32{25, 84, 1, 80, 4}
	md := get(b.Build(16, c, false))(t)
	if !boolean(t, md, "use_cascade") {
		t.Fatal("no cascade")
	}
	equal(t, "cu_prefix_query_lens", i32s(t, md, "cu_prefix_query_lens"), []int32{0, 55})
	equal(t, "prefix_kv_lens", i32s(t, md, "prefix_kv_lens"), []int32{16})
	equal(t, "suffix_kv_lens", i32s(t, md, "suffix_kv_lens"), suffix)
	is(t, "scheduler_max_seqlen_k", integer(t, md, "scheduler_max_seqlen_k"), 84)
	kept := get(md.Clone())(t)
	defer kept.Close()
	is(t, "clone Owned", kept.Owned(), true)

	// rebuild with other batches: the clone keeps its values and its view of the inputs
	md = get(b.Build(0, c, false))(t)
	if _, err := md.Get("suffix_kv_lens"); err == nil {
		t.Fatal("suffix_kv_lens after a build without prefix")
	}
	other := newSample([]int32{7, 8, 9}, []int32{1, 1, 1}, width)
	for i := 0; i < 4; i++ {
		get(b.Build(0, other.common(t), false))(t)
	}
	is(t, "clone kind", kept.Kind(), "FLASH_ATTN")
	equal(t, "clone suffix_kv_lens", i32s(t, kept, "suffix_kv_lens"), suffix)
	equal(t, "clone seq_lens", i32s(t, kept, "seq_lens"), s.seqLens)
	equal(t, "clone query_start_loc", i32s(t, kept, "query_start_loc"), s.queryStartLoc)
	if !boolean(t, kept, "use_cascade") {
		t.Fatal("the clone lost use_cascade")
	}
	ok(t, b.Close())
	runtime.GC()
	equal(t, "clone suffix_kv_lens after Close", i32s(t, kept, "suffix_kv_lens"), suffix)
	equal(t, "clone seq_lens after Close", i32s(t, kept, "seq_lens"), s.seqLens)
	again := get(kept.Clone())(t)
	ok(t, kept.Close())
	equal(t, "a clone of a clone", i32s(t, again, "prefix_kv_lens"), []int32{16})
	equal(t, "a clone of a clone: seq_lens", i32s(t, again, "seq_lens"), s.seqLens)
	ok(t, again.Close())
}

func TestUpdateBlockTableSwapsTheTableAndSlotsOfAnotherGroup(t *testing.T) {
	s := demoSample()
	c := s.common(t)
	group2Table := append([]int32(nil), s.blockTable...)
	for i, id := range group2Table {
		if id != 0 {
			group2Table[i] = id + 1000
		}
	}
	group2Slots := make([]int64, len(s.slotMapping))
	for i, v := range s.slotMapping {
		group2Slots[i] = v + 16000
	}
	table := get(attn.Matrix(group2Table, width))(t)
	slots := attn.Slice(group2Slots)
	a := newBuilder(t, "FLASH_ATTN", 90)
	other := newBuilder(t, "FLASH_ATTN", 90)
	if !get(a.SupportsUpdateBlockTable())(t) {
		t.Fatal("FLASH_ATTN supports update_block_table")
	}
	md := get(a.Build(16, c, false))(t)
	md2 := get(other.UpdateBlockTable(md, table, slots))(t)
	equal(t, "updated block_table", i32s(t, md2, "block_table"), group2Table)
	equal(t, "updated slot_mapping", get(md2.Int64s("slot_mapping"))(t), group2Slots)
	equal(t, "shared suffix_kv_lens", i32s(t, md2, "suffix_kv_lens"), []int32{25, 84, 1, 80, 4})
	is(t, "shared common_prefix_len", integer(t, md2, "common_prefix_len"), 16)
	equal(t, "source block_table", i32s(t, md, "block_table"), s.blockTable)
	// the update shares md's fields: a rebuild of md's builder leaves it stale
	get(a.Build(0, c, false))(t)
	_, err := md2.Int("common_prefix_len")
	wantError(t, err, attn.ErrInvalidArgument, "stale", "FLASH_ATTN")

	// on the same builder, twice: each result has its table; the build's other fields remain
	md = get(a.Build(16, c, false))(t)
	md3 := get(a.UpdateBlockTable(md, table, slots))(t)
	equal(t, "same builder: block_table", i32s(t, md3, "block_table"), group2Table)
	md4 := get(a.UpdateBlockTable(md3, get(attn.Matrix(s.blockTable, width))(t), attn.Slice(s.slotMapping)))(t)
	equal(t, "second update: block_table", i32s(t, md4, "block_table"), s.blockTable)
	equal(t, "second update: seq_lens", i32s(t, md4, "seq_lens"), s.seqLens)
	equal(t, "second update: suffix_kv_lens", i32s(t, md4, "suffix_kv_lens"), []int32{25, 84, 1, 80, 4})
	_, err = md3.Int("common_prefix_len")
	wantError(t, err, attn.ErrInvalidArgument, "stale")

	// bad input: an int32 slot mapping
	slots32 := make([]int32, len(group2Slots))
	for i, v := range group2Slots {
		slots32[i] = int32(v)
	}
	md = get(a.Build(16, c, false))(t)
	_, err = other.UpdateBlockTable(md, table, attn.Slice(slots32))
	e := wantError(t, err, attn.ErrInvalidArgument)
	is(t, "message", e.Message, "slot_mapping has dtype int32, expected int64")
	// a backend without it
	triton := newBuilder(t, "TRITON_ATTN", 90)
	if get(triton.SupportsUpdateBlockTable())(t) {
		t.Fatal("TRITON_ATTN does not support update_block_table")
	}
	_, err = triton.UpdateBlockTable(md, table, slots)
	e = wantError(t, err, attn.ErrUnsupported)
	is(t, "message", e.Message, "TRITON_ATTN does not support update_block_table")
	_, err = other.UpdateBlockTable(nil, table, slots)
	wantError(t, err, attn.ErrInvalidArgument, "nil")
}

func TestCaptureDraftingAndLevels(t *testing.T) {
	s := demoSample()
	always := newBuilder(t, "FLASH_ATTN", 90)
	uniform := newBuilder(t, "FLASH_ATTN", 80)
	mixed := s.common(t)
	md := get(always.BuildForCudagraphCapture(mixed))(t)
	is(t, "num_actual_tokens", integer(t, md, "num_actual_tokens"), 55)
	_, err := uniform.BuildForCudagraphCapture(mixed)
	e := wantError(t, err, attn.ErrUnsupported)
	is(t, "message", e.Message, "FLASH_ATTN has CUDA graph support UNIFORM_BATCH: request 0 has query length 1 but the batch is uniform in 32")
	// four spec-decode requests of 4, 4, 4, 3 tokens: uniform
	specDecode := newSample([]int32{46, 56, 66, 77}, []int32{4, 4, 4, 3}, width)
	md = get(uniform.BuildForCudagraphCapture(specDecode.common(t)))(t)
	is(t, "max_query_len", integer(t, md, "max_query_len"), 4)
	equal(t, "query_start_loc", i32s(t, md, "query_start_loc"), []int32{0, 4, 8, 12, 15})

	// TRITON_ATTN's capture writes 1 into seq_lens, as vLLM does: the Go slice receives it
	triton := newBuilder(t, "TRITON_ATTN", 90)
	capture := demoSample()
	get(triton.BuildForCudagraphCapture(capture.common(t)))(t)
	equal(t, "seq_lens after TRITON_ATTN's capture", capture.seqLens, []int32{1, 1, 1, 1, 1})

	// drafting: fast_build turns FA3's ahead-of-time scheduling off
	c := s.common(t)
	md = get(always.BuildForDrafting(c, 2))(t)
	if boolean(t, md, "aot_schedule") {
		t.Fatal("aot_schedule while drafting")
	}
	_, err = always.BuildForDrafting(c, -1)
	wantError(t, err, attn.ErrInvalidArgument, "draft_index=-1")
	md = get(always.Build(0, c, true))(t)
	if boolean(t, md, "aot_schedule") {
		t.Fatal("aot_schedule in a fast build")
	}
}

func TestUseCascadeAttentionFollowsVLLMsHeuristic(t *testing.T) {
	b := newBuilder(t, "FLASH_ATTN", 90)
	decodes := make([]int32, 256)
	for i := range decodes {
		decodes[i] = 1
	}
	mixed := []int32{1, 1, 1, 1, 1, 1, 1, 2}
	q := func(prefix int64, lens []int32, kvHeads int32) attn.CascadeQuery {
		return attn.NewCascadeQuery(prefix, lens, 32, kvHeads, 132)
	}
	cases := []struct {
		q    attn.CascadeQuery
		want bool
		why  string
	}{
		{q(255, decodes[:8], 8), false, "prefix < 256"},
		{q(1024, decodes[:7], 8), false, "< 8 requests"},
		{q(1024, decodes[:8], 32), true, "MHA: no FlashDecoding"},
		{q(1024, mixed, 8), true, "a prefill in the batch"},
		{q(1024, decodes[:8], 8), false, "8 decodes: FlashDecoding wins"},
		{q(1024, decodes, 8), true, "256 decodes: cascade wins"},
	}
	for _, c := range cases {
		is(t, c.why, get(b.UseCascadeAttention(c.q))(t), c.want)
	}
	alibi := q(1024, decodes, 8)
	alibi.UseALiBi = true
	is(t, "ALiBi", get(b.UseCascadeAttention(alibi))(t), false)
	_, err := b.UseCascadeAttention(attn.NewCascadeQuery(1024, decodes, 32, 0, 132))
	e := wantError(t, err, attn.ErrInvalidArgument)
	is(t, "message", e.Message, "query->num_kv_heads=0 must be positive")
}

func TestTheOtherBackendsHaveTheValuesComputedByHand(t *testing.T) {
	s := demoSample()
	c := s.common(t)
	pages := make([]int32, len(s.seqLens))
	indptr := []int32{0}
	last := make([]int32, len(s.seqLens))
	for i, v := range s.seqLens {
		pages[i] = (v + 15) / 16
		indptr = append(indptr, indptr[i]+pages[i])
		last[i] = v % 16
		if last[i] == 0 {
			last[i] = 16
		}
	}
	equal(t, "indptr", indptr, []int32{0, 3, 10, 12, 18, 20})

	fi := newBuilder(t, "FLASHINFER", 80) // FlashInfer-native decode (sm90 decodes on XQA in vLLM 0.33)
	md := get(fi.Build(0, c, false))(t)
	is(t, "num_decodes", integer(t, md, "num_decodes"), 3)
	is(t, "num_prefills", integer(t, md, "num_prefills"), 2)
	equal(t, "paged_kv_indptr_cpu", i32s(t, md, "paged_kv_indptr_cpu"), indptr)
	equal(t, "paged_kv_last_page_len_cpu", i32s(t, md, "paged_kv_last_page_len_cpu"), last)
	equal(t, "prefill_qo_indptr_cpu", i32s(t, md, "prefill_qo_indptr_cpu"), []int32{0, 32, 52})
	if boolean(t, md, "decode_use_trtllm") {
		t.Fatal("decode_use_trtllm")
	}

	flex := newBuilder(t, "FLEX_ATTENTION", 90)
	md = get(flex.Build(0, c, false))(t)
	var docIDs []int32
	for r, q := range query {
		for i := int32(0); i < q; i++ {
			docIDs = append(docIDs, int32(r))
		}
	}
	equal(t, "doc_ids", i32s(t, md, "doc_ids"), docIDs)
	equal(t, "decode_offset", i32s(t, md, "decode_offset")[:5], context) // max_num_seqs long (0.33)
	equal(t, "num_blocks_per_seq", i32s(t, md, "num_blocks_per_seq"), pages)
	// each token reads its own request's blocks up to its position (vLLM 0.33's direct build):
	// group 0 = 3 + 7 + 2 + request 3's first 5 (positions 64..76), group 2 = request 3's 6 and
	// request 4's first block (positions 0..12)
	equal(t, "kv_num_blocks", i32s(t, md, "kv_num_blocks"), []int32{17, 6, 7, 2})

	tree := newBuilder(t, "TREE_ATTN", 90)
	md = get(tree.Build(0, c, false))(t)
	bias := get(md.Tensor("tree_attn_bias"))(t)
	equal(t, "tree_attn_bias shape", bias.Shape(), []int64{2, 2})
	is(t, "tree_attn_bias dtype", bias.DType(), attn.Float32)
	values := get(bias.Float32s())(t)
	if values[0] != 0 || !math.IsInf(float64(values[1]), -1) {
		t.Fatalf("tree_attn_bias %v", values)
	}
	equal(t, "prefill_query_start_loc", i32s(t, md, "prefill_query_start_loc"), []int32{0, 32, 52})

	triton := newBuilder(t, "TRITON_ATTN", 90)
	md = get(triton.Build(0, c, false))(t)
	softmax := get(md.Tensor("softmax_segm_output"))(t)
	equal(t, "softmax_segm_output shape", softmax.Shape(), []int64{16, 32, 16, 128})
	is(t, "seq_threshold_3D", integer(t, md, "seq_threshold_3D"), 16)
	if _, err := md.Get("all_pure_first_prefill"); err == nil { // gone with vLLM 0.33
		t.Fatal("all_pure_first_prefill")
	}

	cpu := newBuilder(t, "CPU_ATTN", 90)
	md = get(cpu.Build(0, c, false))(t)
	if !boolean(t, md, "causal") {
		t.Fatal("CPU_ATTN causal")
	}
	is(t, "scheduler_sliding_window_size", integer(t, md, "scheduler_sliding_window_size"), -1)
}

// Every registered backend (built-in and from plugins) builds the demo's batch, and every
// field of its metadata reads back by index and by name.
func TestEveryBackendBuildsTheDemoBatch(t *testing.T) {
	registryMu.Lock()
	defer registryMu.Unlock()
	l := library(t)
	plugin := get(l.LoadPlugin(examplePluginPath(t)))(t)
	defer func() { ok(t, plugin.Close()) }()
	s := demoSample()
	c := s.common(t)
	// vLLM 0.33's is_prefilling (the Mamba family requires it): the chunked and the fresh
	// prefill are still in their prompts
	c.IsPrefilling = attn.Slice([]int32{0, 0, 0, 1, 1})
	// the tokens' positions (DEEPSEEK_V41_COMPRESSOR requires them)
	var positions []int64
	for r := range context {
		for p := context[r]; p < context[r]+query[r]; p++ {
			positions = append(positions, int64(p))
		}
	}
	c.Positions = attn.Slice(positions)
	if c.NumReqs != 5 {
		t.Fatalf("the demo sample has %d requests, the flags 5", c.NumReqs)
	}
	infos := get(l.BackendInfos())(t)
	if last := infos[len(infos)-1]; last.Name != "EXAMPLE_PAGED" || last.Origin != attn.BackendPlugin {
		t.Fatalf("backends %v", infos)
	}
	for _, info := range infos {
		name := info.Name
		b, _ := builderFor(t, l, info, 90)
		md, err := b.Build(0, c, false)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		is(t, name+" kind", md.Kind(), name)
		fields := get(md.Fields())(t)
		is(t, name+" fields", len(fields), md.Len())
		for _, f := range fields {
			g := get(md.Get(f.Name))(t)
			is(t, name+"."+f.Name, g.Kind, f.Kind)
			if f.Kind == attn.FieldTensor && f.Tensor.Device().HostReadable() && f.Tensor.DType() == attn.Int32 {
				get(f.Tensor.Int32s())(t)
			}
		}
		if seq, err := md.Int32s("seq_lens"); err == nil { // most backends have it
			if name == "FLEX_ATTENTION" { // vLLM 0.33 hands out its max_num_seqs copy
				seq = seq[:len(s.seqLens)]
			}
			equal(t, name+" seq_lens", seq, s.seqLens)
		} else if g, e := md.Get("seq_lens"); e == nil && g.IsNone() {
			// a composite's child not chosen for the batch (TRITON_FLASHINFER's TRITON_ATTN), CACHE_ONLY_ATTN
		} else {
			wantError(t, err, attn.ErrNotFound, "seq_lens", name)
		}
		ok(t, b.Close())
	}
}

func TestVLLMsWrappersChunkedLocalAndFastPrefill(t *testing.T) {
	l := library(t)
	s := demoSample()
	local := spec()
	local.Kind = attn.KVChunkedLocalAttention
	local.AttentionChunkSize = 32
	b := get(l.NewBuilder("FLASH_ATTN", local, config(90)))(t)
	defer b.Close()
	md := get(b.Build(0, s.common(t), false))(t)
	is(t, "kind", md.Kind(), "ChunkedLocalAttention_32_FLASH_ATTN")
	is(t, "fields", md.Len(), 38)
	equal(t, "query_start_loc", i32s(t, md, "query_start_loc"), []int32{0, 1, 2, 3, 35, 55})
	equal(t, "seq_lens", i32s(t, md, "seq_lens"), []int32{9, 4, 17, 32, 20})
	equal(t, "virtual_req", i32s(t, md, "virtual_req"), []int32{0, 1, 2, 3, 4})
	table := get(md.Tensor("block_table"))(t)
	equal(t, "block_table shape", table.Shape(), []int64{5, 2})
	equal(t, "block_table row 0", get(table.Int32s())(t)[:2], []int32{3, 0})

	cfg := config(90)
	cfg.KVSharingFastPrefill = true
	fast := get(l.NewBuilder("FLASH_ATTN", spec(), cfg))(t)
	defer fast.Close()
	c := s.common(t)
	c.LogitsIndicesPadded = attn.Slice([]int32{0, 1, 2, 34, 54}) // the last token of each request
	c.NumLogitsIndices = 5
	md = get(fast.Build(0, c, false))(t)
	is(t, "kind", md.Kind(), "FastPrefillFLASH_ATTN")
	equal(t, "query_start_loc", i32s(t, md, "query_start_loc"), []int32{0, 1, 2, 3, 4, 5})
	is(t, "num_actual_tokens", integer(t, md, "num_actual_tokens"), 5)
	is(t, "max_query_len", integer(t, md, "max_query_len"), 1)
	equal(t, "logits_indices_padded", i32s(t, md, "logits_indices_padded"), []int32{0, 1, 2, 34, 54})
	is(t, "num_logits_indices", integer(t, md, "num_logits_indices"), 5)
}

// Inputs in a HostBuffer reach libattn without a copy: the metadata views them.
func TestHostBufferInputsAreNotCopied(t *testing.T) {
	s := demoSample()
	buf := get(attn.NewHostBuffer(4 * len(s.seqLens)))(t)
	defer buf.Close()
	copy(buf.Int32s(), s.seqLens)
	c := s.common(t)
	c.SeqLens = get(buf.Tensor(attn.Int32, int64(len(s.seqLens))))(t)
	b := newBuilder(t, "FLASH_ATTN", 90)
	md := get(b.Build(0, c, false))(t)
	seq := get(md.Tensor("seq_lens"))(t)
	is(t, "seq_lens address", seq.Data(), buf.Ptr())
	equal(t, "seq_lens", get(seq.Int32s())(t), s.seqLens)
	// the Go-slice inputs were staged: their views are not the slices
	qsl := get(md.Tensor("query_start_loc"))(t)
	if qsl.Data() == uintptr(unsafe.Pointer(&s.queryStartLoc[0])) {
		t.Fatal("query_start_loc views Go memory")
	}
	_, err := buf.Tensor(attn.Int32, 100)
	wantError(t, err, attn.ErrInvalidArgument, "needs 400 bytes")
	_, err = attn.NewHostBuffer(-1)
	wantError(t, err, attn.ErrInvalidArgument)
}

// A builder places its persistent buffers in a caller's workspace of the size libattn asks for.
func TestACallerWorkspaceHoldsTheBuffers(t *testing.T) {
	l := library(t)
	size := get(l.BuilderWorkspaceSize("FLASH_ATTN", spec(), config(90)))(t)
	ws := get(attn.NewHostBuffer(int(size)))(t)
	defer ws.Close()
	cfg := config(90)
	cfg.Workspace = ws
	b := get(l.NewBuilder("FLASH_ATTN", spec(), cfg))(t)
	defer b.Close()
	md := get(b.Build(0, demoSample().common(t), false))(t)
	buffer := get(md.Tensor("scheduler_metadata_buffer"))(t)
	if buffer.Data() < ws.Ptr() || buffer.Data() >= ws.Ptr()+uintptr(ws.Len()) {
		t.Fatalf("scheduler_metadata_buffer at %#x, outside the workspace [%#x, +%d)", buffer.Data(), ws.Ptr(), ws.Len())
	}
	small := get(attn.NewHostBuffer(16))(t)
	defer small.Close()
	cfg.Workspace = small
	_, err := l.NewBuilder("FLASH_ATTN", spec(), cfg)
	wantError(t, err, attn.ErrInvalidArgument, "workspace")
	cfg.ExternalWorkspace = 4096
	_, err = l.NewBuilder("FLASH_ATTN", spec(), cfg)
	wantError(t, err, attn.ErrInvalidArgument, "not both")
}
