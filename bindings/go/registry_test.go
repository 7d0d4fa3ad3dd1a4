package attn_test

import (
	"testing"

	"libattn.dev/attn"
)

// The backend registry: names in order, CUDA graph support per capability, builder queries,
// the minimum over builders, workspace sizes, global hyperparameters.

func TestBuiltInBackendsAndTheirCudagraphSupport(t *testing.T) {
	registryMu.Lock()
	defer registryMu.Unlock()
	l := library(t)
	names := get(l.Backends())(t)
	is(t, "BackendCount", l.BackendCount(), len(names))
	_, err := l.BackendName(len(names))
	wantError(t, err, attn.ErrNotFound)
	_, err = l.BackendName(-1)
	wantError(t, err, attn.ErrNotFound)
	// the built-in backends come first
	infos := get(l.BackendInfos())(t)
	for i := 1; i < len(infos); i++ {
		if infos[i-1].Origin == attn.BackendPlugin && infos[i].Origin == attn.BackendBuiltin {
			t.Fatalf("built-in %s after plugin backend %s", infos[i].Name, infos[i-1].Name)
		}
	}

	const (
		never   = attn.CGNever
		single  = attn.CGUniformSingleTokenDecode
		uniform = attn.CGUniformBatch
		always  = attn.CGAlways
	)
	// What README.md's table says of these backends (checked by name: their behaviour, not a
	// list to enumerate): (sm90, sm80, sm100), reorder threshold, update_block_table.
	type expectation struct {
		levels  [3]attn.CudagraphSupport
		reorder int32
		update  bool
	}
	expected := map[string]expectation{
		"FLASH_ATTN":     {[3]attn.CudagraphSupport{always, uniform, always}, attn.NoReorder, true},
		"FLASHINFER":     {[3]attn.CudagraphSupport{uniform, uniform, uniform}, 1, false},
		"TRITON_ATTN":    {[3]attn.CudagraphSupport{always, always, always}, attn.NoReorder, false},
		"FLEX_ATTENTION": {[3]attn.CudagraphSupport{always, always, always}, attn.NoReorder, false},
		"TREE_ATTN":      {[3]attn.CudagraphSupport{never, never, never}, 2, false},
		"CPU_ATTN":       {[3]attn.CudagraphSupport{never, never, never}, attn.NoReorder, false},
	}
	checked := 0
	for _, name := range fullAttentionBackends(t, l) {
		want, ok := expected[name]
		if !ok {
			continue
		}
		checked++
		for k, capability := range []int32{90, 80, 100} {
			level := get(l.BackendCudagraphSupport(name, spec(), config(capability)))(t)
			if level != want.levels[k] {
				t.Fatalf("%s sm%d: %v, want %v", name, capability, level, want.levels[k])
			}
		}
		b := newBuilder(t, name, 90)
		is(t, "BackendName", b.BackendName(), name)
		is(t, name+" CudagraphSupport", get(b.CudagraphSupport())(t), want.levels[0])
		is(t, name+" ReorderBatchThreshold", get(b.ReorderBatchThreshold())(t), want.reorder)
		is(t, name+" SupportsUpdateBlockTable", get(b.SupportsUpdateBlockTable())(t), want.update)
	}
	is(t, "backends checked", checked, len(expected))
	is(t, "String", attn.CGUniformSingleTokenDecode.String(), "UNIFORM_SINGLE_TOKEN_DECODE")
	is(t, "String", attn.CudagraphSupport(9).String(), "CudagraphSupport(9)")

	local := spec()
	local.Kind = attn.KVChunkedLocalAttention
	local.AttentionChunkSize = 32
	is(t, "chunked local", get(l.BackendCudagraphSupport("FLASH_ATTN", local, config(90)))(t), attn.CGNever)
	_, err = l.BackendCudagraphSupport("NOPE", spec(), config(90))
	wantError(t, err, attn.ErrNotFound, "NOPE")
}

func TestMinCudagraphSupportAndWorkspaceSize(t *testing.T) {
	l := library(t)
	always := newBuilder(t, "FLASH_ATTN", 90)
	uniform := newBuilder(t, "FLASH_ATTN", 80)
	xqa := newBuilder(t, "FLASHINFER", 90) // UNIFORM_BATCH (XQA decode, vLLM 0.33)
	is(t, "min(ALWAYS, UNIFORM_BATCH)", get(l.MinCudagraphSupport(always, uniform))(t), attn.CGUniformBatch)
	is(t, "min(3 builders)", get(l.MinCudagraphSupport(always, uniform, xqa, always))(t), attn.CGUniformBatch)
	is(t, "min()", get(l.MinCudagraphSupport())(t), attn.CGAlways)
	_, err := l.MinCudagraphSupport(always, nil)
	wantError(t, err, attn.ErrInvalidArgument, "builders[1] is nil")
	closed := get(l.NewBuilder("TRITON_ATTN", spec(), config(90)))(t)
	ok(t, closed.Close())
	_, err = l.MinCudagraphSupport(always, closed)
	wantError(t, err, attn.ErrInvalidArgument, "builders[1]", "closed")

	size := get(l.BuilderWorkspaceSize("FLASH_ATTN", spec(), config(90)))(t)
	if size == 0 {
		t.Fatal("FLASH_ATTN needs a workspace")
	}
	_, err = l.BuilderWorkspaceSize("NOPE", spec(), config(90))
	wantError(t, err, attn.ErrNotFound, "NOPE")
}

func TestGlobalHyperparameters(t *testing.T) {
	l := library(t)
	def := attn.DefaultPerLayerParams()
	is(t, "default window", def.WindowLeft, int32(-1))
	is(t, "default sm_scale", def.SMScale, 1.0)
	a := def
	a.WindowLeft = 127
	b := a
	b.HasLogitsSoftCap, b.LogitsSoftCap = true, 30
	g := get(l.InferGlobalHyperparameters([]attn.PerLayerParams{a, a}))(t)
	is(t, "global", g.Global, a)
	if !g.SameWindowLefts || !g.SameAllParams {
		t.Fatalf("%+v", g)
	}
	g = get(l.InferGlobalHyperparameters([]attn.PerLayerParams{b, a}))(t)
	is(t, "global soft cap", g.Global.LogitsSoftCap, 30.0)
	if !g.SameWindowLefts || g.SameAllParams {
		t.Fatalf("%+v", g)
	}
	_, err := l.InferGlobalHyperparameters(nil)
	wantError(t, err, attn.ErrInvalidArgument, "No attention layers found in the model")

	// the layers also reach a builder through its config
	c := config(90)
	c.Layers = []attn.PerLayerParams{a, b}
	bld := get(l.NewBuilder("FLASHINFER", spec(), c))(t)
	ok(t, bld.Close())
}
