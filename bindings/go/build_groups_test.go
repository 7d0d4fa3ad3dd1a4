package attn_test

import (
	"fmt"
	"testing"

	"libattn.dev/attn"
)

// BuildGroups (attn_build_groups, ABI 1.7): a hybrid model's KV cache groups built in one call
// equal each builder's own Build; the results and the batch staged for them follow each
// builder's lifetime; bad groups are refused by name.

// hybridBuilders are a hybrid model's groups: full attention, a sliding window, Mamba2.
func hybridBuilders(t *testing.T) []*attn.Builder {
	t.Helper()
	l := library(t)
	swa := spec()
	swa.Kind = attn.KVSlidingWindow
	swa.SlidingWindow = 64
	mamba := kindSpecs()[3]
	var group []*attn.Builder
	for _, g := range []struct {
		backend string
		spec    attn.KVCacheSpec
	}{{"FLASH_ATTN", spec()}, {"FLASH_ATTN", swa}, {"MAMBA2", mamba}} {
		b, err := l.NewBuilder(g.backend, g.spec, config(90))
		if err != nil {
			t.Fatalf("%s builder: %v", g.backend, err)
		}
		t.Cleanup(func() { b.Close() })
		group = append(group, b)
	}
	return group
}

// hybridBatch is a batch of Go slices (staged by the binding) with vLLM's is_prefilling, which
// Mamba2 requires: the requests with more than one query token are in their prompts.
func hybridBatch(t *testing.T, ctx, q []int32) *attn.CommonMetadata {
	t.Helper()
	c := newSample(ctx, q, width).common(t)
	prefilling := make([]int32, len(q))
	for i := range q {
		if q[i] > 1 {
			prefilling[i] = 1
		}
	}
	c.IsPrefilling = attn.Slice(prefilling)
	return c
}

func hybridBatches(t *testing.T) []*attn.CommonMetadata {
	return []*attn.CommonMetadata{
		hybridBatch(t, context, query),
		hybridBatch(t, []int32{3, 4}, []int32{1, 1}),
		hybridBatch(t, []int32{0, 17, 200, 31}, []int32{7, 1, 33, 2}),
	}
}

// sameMetadata checks every field of got against want: names, kinds, values, and the shape,
// dtype and elements of every host tensor.
func sameMetadata(t *testing.T, what string, got, want *attn.Metadata) {
	t.Helper()
	is(t, what+" kind", got.Kind(), want.Kind())
	gf, wf := get(got.Fields())(t), get(want.Fields())(t)
	is(t, what+" fields", len(gf), len(wf))
	for i := range gf {
		g, w := gf[i], wf[i]
		name := what + "." + w.Name
		is(t, name+" name", g.Name, w.Name)
		is(t, name+" field kind", g.Kind, w.Kind)
		if g.Kind != attn.FieldTensor {
			is(t, name+" int", g.Int, w.Int)
			is(t, name+" float", g.Float, w.Float)
			continue
		}
		equal(t, name+" shape", g.Tensor.Shape(), w.Tensor.Shape())
		is(t, name+" dtype", g.Tensor.DType(), w.Tensor.DType())
		if !g.Tensor.Device().HostReadable() {
			continue
		}
		switch g.Tensor.DType() {
		case attn.Int32:
			equal(t, name, get(g.Tensor.Int32s())(t), get(w.Tensor.Int32s())(t))
		case attn.Int64:
			equal(t, name, get(g.Tensor.Int64s())(t), get(w.Tensor.Int64s())(t))
		case attn.Float32:
			equal(t, name, get(g.Tensor.Float32s())(t), get(w.Tensor.Float32s())(t))
		}
	}
}

// tensorAddresses maps each tensor field to the address it views.
func tensorAddresses(t *testing.T, md *attn.Metadata) map[string]uintptr {
	t.Helper()
	out := map[string]uintptr{}
	for _, f := range get(md.Fields())(t) {
		if f.Kind == attn.FieldTensor {
			out[f.Name] = f.Tensor.Data()
		}
	}
	return out
}

func TestBuildGroupsEqualsEachBuildersOwnBuild(t *testing.T) {
	group, twins := hybridBuilders(t), hybridBuilders(t)
	var previous []*attn.Metadata
	var mds []*attn.Metadata
	for k, c := range hybridBatches(t) {
		mds = get(attn.BuildGroups(group, nil, c, false))(t)
		is(t, "results", len(mds), len(group))
		for i, md := range mds {
			want := get(twins[i].Build(0, c, false))(t)
			sameMetadata(t, fmt.Sprintf("batch %d builders[%d] %s", k, i, md.Kind()), md, want)
		}
		// each builder's earlier result, from the previous group, is stale
		for i, p := range previous {
			wantError(t, p.Valid(), attn.ErrInvalidArgument, "stale", "builder '"+group[i].BackendName()+"'")
		}
		previous = mds
	}
	// the results view the builders' own persistent buffers: a single build on the same
	// builder (of a batch of its own) hands out the same addresses; the other fields view the
	// batch, staged once for the whole group (FLASH_ATTN's input fields show where)
	grouped := make([]map[string]uintptr, len(group))
	for i, md := range mds {
		grouped[i] = tensorAddresses(t, md)
	}
	staged := map[uintptr]bool{}
	for _, name := range []string{"query_start_loc", "seq_lens", "block_table", "slot_mapping"} {
		staged[grouped[0][name]] = true
	}
	last := hybridBatches(t)[2]
	for i, b := range group {
		single := tensorAddresses(t, get(b.Build(0, last, false))(t))
		wantError(t, mds[i].Valid(), attn.ErrInvalidArgument, "stale")
		persistent := 0
		for name, address := range single {
			if staged[grouped[i][name]] {
				continue
			}
			is(t, fmt.Sprintf("builders[%d] %s address", i, name), grouped[i][name], address)
			persistent++
		}
		if persistent == 0 {
			t.Fatalf("builders[%d] has no field in its persistent buffers: %v", i, single)
		}
	}
}

// The batch is staged once for the whole group: builders[0] rebuilding on its own (and reusing
// its staging memory) does not change what the other builders' results read.
func TestBuildGroupsResultsOutliveTheFirstBuildersRebuilds(t *testing.T) {
	group, twins := hybridBuilders(t), hybridBuilders(t)
	batches := hybridBatches(t)
	mds := get(attn.BuildGroups(group, nil, batches[0], false))(t)
	for _, c := range []*attn.CommonMetadata{batches[1], batches[2], batches[1], batches[2]} {
		get(group[0].Build(0, c, false))(t)
	}
	wantError(t, mds[0].Valid(), attn.ErrInvalidArgument, "stale")
	for i := 1; i < len(group); i++ {
		sameMetadata(t, fmt.Sprintf("builders[%d] %s", i, mds[i].Kind()), mds[i], get(twins[i].Build(0, batches[0], false))(t))
	}
}

func TestBuildGroupsRefusesBadGroups(t *testing.T) {
	l := library(t)
	group := hybridBuilders(t)
	fa, swa, mb := group[0], group[1], group[2]
	c := hybridBatches(t)[0]
	first := get(attn.BuildGroups([]*attn.Builder{mb, fa}, nil, c, false))(t)
	seqLens := get(first[0].Tensor("seq_lens"))(t)
	wantSeq := get(seqLens.Int32s())(t)

	_, err := attn.BuildGroups(nil, nil, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "builders is empty")
	_, err = attn.BuildGroups([]*attn.Builder{mb, fa, mb}, nil, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "builders[2] is builders[0]", "may appear once")
	_, err = attn.BuildGroups([]*attn.Builder{fa, nil}, nil, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "builders[1] is nil")
	_, err = attn.BuildGroups([]*attn.Builder{mb, fa}, []int64{0}, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "commonPrefixLens has 1 entries for 2 builders")
	_, err = attn.BuildGroups([]*attn.Builder{mb, fa}, nil, nil, false)
	wantError(t, err, attn.ErrInvalidArgument, "common is nil")
	swa.SetStream(attn.Stream(1))
	_, err = attn.BuildGroups([]*attn.Builder{fa, swa}, nil, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "builders[1] builds on stream 0x1", "one stream")
	swa.SetStream(0)
	closed := get(l.NewBuilder("FLASH_ATTN", spec(), config(90)))(t)
	ok(t, closed.Close())
	_, err = attn.BuildGroups([]*attn.Builder{fa, closed}, nil, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "builders[1]: builder 'FLASH_ATTN' is closed")
	// libattn's own refusal names the builder; the batch is refused before anything is built,
	// so the earlier results stay valid (and every builder is free again)
	_, err = attn.BuildGroups([]*attn.Builder{mb, fa}, []int64{0, -1}, c, false)
	wantError(t, err, attn.ErrInvalidArgument, "builders[1]: common_prefix_len=-1")
	for _, md := range first {
		ok(t, md.Valid())
	}
	equal(t, "seq_lens after a refusal", get(seqLens.Int32s())(t), wantSeq)

	// FLASH_ATTN checks the cascade prefix (whole blocks) in its build, after MAMBA2 was
	// rebuilt: MAMBA2's earlier result is stale, also through a view taken before;
	// FLASH_ATTN's is not
	_, err = attn.BuildGroups([]*attn.Builder{mb, fa}, []int64{0, 5}, c, false)
	e := wantError(t, err, attn.ErrInvalidArgument, "builders[1]: ")
	wantError(t, first[0].Valid(), attn.ErrInvalidArgument, "MAMBA2 metadata is stale")
	_, err = seqLens.Int32s()
	wantError(t, err, attn.ErrInvalidArgument, "stale")
	ok(t, first[1].Valid())
	is(t, "FLASH_ATTN's own message", e.Message, "builders[1]: "+wantError(t, func() error {
		_, err := fa.Build(5, c, false)
		return err
	}(), attn.ErrInvalidArgument).Message)
	// both builders build again, alone or grouped
	again := get(attn.BuildGroups([]*attn.Builder{mb, fa, swa}, nil, c, false))(t)
	equal(t, "seq_lens", get(again[0].Int32s("seq_lens"))(t), wantSeq)
}
