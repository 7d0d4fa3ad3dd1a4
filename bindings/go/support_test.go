package attn_test

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"libattn.dev/attn"
)

// What the tests share: the library from $ATTN_LIBRARY, the C demo's sample batch and its
// values computed here by hand.

func libraryPath(t testing.TB) string {
	t.Helper()
	path := os.Getenv("ATTN_LIBRARY")
	if path == "" {
		t.Fatal("ATTN_LIBRARY is not set: point it at libattn.so.1 (e.g. ATTN_LIBRARY=$PWD/build/libattn.so.1 go test)")
	}
	return path
}

var (
	libOnce sync.Once
	libErr  error
	lib     *attn.Library
)

// library is the library named by $ATTN_LIBRARY, opened once.
func library(t testing.TB) *attn.Library {
	t.Helper()
	path := libraryPath(t)
	libOnce.Do(func() { lib, libErr = attn.Open(path) })
	if libErr != nil {
		t.Fatalf("cannot load ATTN_LIBRARY=%s: %v", path, libErr)
	}
	return lib
}

func examplePluginPath(t testing.TB) string {
	t.Helper()
	path := os.Getenv("ATTN_EXAMPLE_PLUGIN")
	if path == "" {
		t.Fatal("ATTN_EXAMPLE_PLUGIN is not set: point it at libattn_example_plugin.so (built beside libattn)")
	}
	return path
}

// registryMu serialises the tests that change the registry (plugins) against those that list it.
var registryMu sync.Mutex

const (
	blockSize = 16
	width     = 64 // max_model_len 1024 / 16
)

var (
	context = []int32{40, 99, 16, 64, 0}
	query   = []int32{1, 1, 1, 32, 20}
)

// spec is the demo's: full attention, block 16, 8 KV heads, head 128, bf16.
func spec() attn.KVCacheSpec { return attn.NewKVCacheSpec(blockSize, 8, 128) }

// kindSpecs are the demo batch's KV cache specs, one per kind a backend may accept: spec(),
// vLLM's MLAAttentionSpec (one 576-wide latent head; block 128 suits every MLA kernel, then
// block 256 for DeepSeek V4's sparse MLA kernels) and MambaSpec (a state slot per request;
// Mamba2 scans 16-token chunks).
func kindSpecs() []attn.KVCacheSpec {
	mla := attn.NewKVCacheSpec(128, 1, 576)
	mla.Kind = attn.KVMLA
	mla256 := mla
	mla256.BlockSize = 256
	mamba := attn.NewKVCacheSpec(blockSize, 1, 1)
	mamba.Kind = attn.KVMamba
	mamba.MambaChunkSize = 16
	swa := spec() // a sliding-window cache (INKLING_SCONV_SWA takes no other kind)
	swa.Kind = attn.KVSlidingWindow
	swa.SlidingWindow = blockSize
	note := mla // dots3 NOTE's windowed 1024 + 64 latent cache (DOTS3_NOTE_TRITON_MLA)
	note.HeadSize = 1088
	note.SlidingWindow = 128
	full128 := spec() // MiniMax-M3's sparse GQA cache at its kernel block (MINIMAX_M3_SPARSE)
	full128.BlockSize = 128
	return []attn.KVCacheSpec{spec(), mla, mla256, mamba, swa, note, full128}
}

// builderFor is a builder of a registered backend on the first of kindSpecs whose kind the
// backend accepts (attn_backend_info) and that it builds for, with the default cache dtype and
// then FP8 (the backends whose caches are FP8 only, as TOKENSPEED_MLA), then DeepSeek V4.1's
// inputs on an SM100 GPU (DEEPSEEK_V41_SPARSE_INDEXER), then ROCm, then MiniMax-M3's index heads
// (MINIMAX_M3_SPARSE_INDEXER): a spec per kind, not per name. A
// plugin's backend accepts every kind as far as the library knows, so ErrUnsupported moves on
// to the next kind. The builder is closed when the test ends.
func builderFor(t testing.TB, l *attn.Library, info attn.BackendInfo, capability int32) (*attn.Builder, attn.KVCacheSpec) {
	t.Helper()
	for _, s := range kindSpecs() {
		if !info.Accepts(s.Kind) {
			continue
		}
		for attempt, dtype := range []attn.KVDtype{attn.KVDtypeAuto, attn.KVDtypeFP8E4M3, attn.KVDtypeAuto, attn.KVDtypeAuto, attn.KVDtypeAuto} {
			cfg := config(capability)
			cfg.CacheDtype = dtype
			if s.HeadSize == 1088 { // dots3 NOTE's kv_lora_rank
				cfg.MLAKVLoraRank = 1024
			}
			if s.BlockSize == 128 { // a page-16 rebase buffer as wide as the demo batch's table
				cfg.MaxModelLen = width * 128 // (MINIMAX_M3_SPARSE_AITER_PA: cdiv(max_model_len, 128) columns)
			}
			if attempt == 2 { // DeepSeek V4.1's two-level indexer, MXFP4 cache, SM100
				cfg.DeviceCapability = 100
				cfg.CandidateBlockSize, cfg.CandidateTopkBlocks = 64, 8
				cfg.IndexerKVMXFP4 = true
				cfg.BlockTableWidth = int32(width) // the demo batch's table
			}
			if attempt == 3 { // DeepSeek V4 / V4.1's ROCm builders
				cfg.PlatformROCm = true
			}
			if attempt == 4 { // MiniMax-M3's lightning indexer (MINIMAX_M3_SPARSE_INDEXER)
				cfg.SparseNumIndexHeads = 4
			}
			b, err := l.NewBuilder(info.Name, s, cfg)
			var e *attn.Error
			if errors.As(err, &e) && e.Code == attn.ErrUnsupported {
				continue
			}
			if err != nil {
				t.Fatalf("%s builder: %v", info.Name, err)
			}
			t.Cleanup(func() { b.Close() })
			return b, s
		}
	}
	t.Fatalf("%s (kinds %#x) builds on none of the test's specs", info.Name, info.KVCacheKinds)
	return nil, attn.KVCacheSpec{}
}

// fullAttentionBackends are the built-in backends that build for spec(), in registry order.
func fullAttentionBackends(t testing.TB, l *attn.Library) []string {
	t.Helper()
	var names []string
	for _, info := range get(l.BackendInfos())(t) {
		if info.Origin != attn.BackendBuiltin || !info.Accepts(attn.KVFullAttention) {
			continue
		}
		b, err := l.NewBuilder(info.Name, spec(), config(90))
		var e *attn.Error
		if errors.As(err, &e) && e.Code == attn.ErrUnsupported {
			continue // another family (MLA, Mamba)
		}
		if err != nil {
			t.Fatalf("%s builder: %v", info.Name, err)
		}
		b.Close()
		names = append(names, info.Name)
	}
	return names
}

// config is the demo's config for a compute capability.
func config(capability int32) attn.BuilderConfig {
	c := attn.NewBuilderConfig(256, 8192, 1024, 32)
	c.DeviceCapability = capability
	c.NumGPUBlocks = 4096
	return c
}

// sample is a batch like the C demo's: block ids from 1, allocated request by request.
type sample struct {
	queryStartLoc []int32
	seqLens       []int32
	blockTable    []int32
	slotMapping   []int64
	width         int
}

func newSample(ctx, q []int32, w int) *sample {
	s := &sample{queryStartLoc: []int32{0}, blockTable: make([]int32, len(ctx)*w), width: w}
	next := int32(1)
	for r := range ctx {
		seq := ctx[r] + q[r]
		s.seqLens = append(s.seqLens, seq)
		s.queryStartLoc = append(s.queryStartLoc, s.queryStartLoc[r]+q[r])
		for j := 0; j < int((seq+blockSize-1)/blockSize); j++ {
			s.blockTable[r*w+j] = next
			next++
		}
		for p := ctx[r]; p < seq; p++ {
			block := int64(s.blockTable[r*w+int(p/blockSize)])
			s.slotMapping = append(s.slotMapping, block*blockSize+int64(p%blockSize))
		}
	}
	return s
}

func demoSample() *sample { return newSample(context, query, width) }

func (s *sample) common(t testing.TB) *attn.CommonMetadata {
	t.Helper()
	c, err := attn.NewCommonMetadata(s.queryStartLoc, s.seqLens, s.blockTable, s.width, s.slotMapping)
	if err != nil {
		t.Fatalf("the sample batch: %v", err)
	}
	return c
}

func newBuilder(t testing.TB, backend string, capability int32) *attn.Builder {
	t.Helper()
	b, err := library(t).NewBuilder(backend, spec(), config(capability))
	if err != nil {
		t.Fatalf("%s builder: %v", backend, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// get checks a (value, error) pair: get(b.Build(...))(t) is the value, or fails the test.
func get[T any](v T, err error) func(testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return v
	}
}

func ok(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

// wantError checks that err is an *attn.Error with the code whose message contains every
// fragment, and returns it.
func wantError(t testing.TB, err error, code attn.Code, fragments ...string) *attn.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want [%v] %q", code, fragments)
	}
	var e *attn.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v (%T) is not an *attn.Error", err, err)
	}
	if e.Code != code || !errors.Is(err, code) {
		t.Fatalf("code %v (%s), want %v", e.Code, e.Message, code)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Message, f) {
			t.Fatalf("message %q lacks %q", e.Message, f)
		}
	}
	return e
}

func equal[T comparable](t testing.TB, what string, got, want []T) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s = %v, want %v (index %d)", what, got, want, i)
		}
	}
}

func is[T comparable](t testing.TB, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Fatalf("%s = %v, want %v", what, got, want)
	}
}

func i32s(t testing.TB, md *attn.Metadata, name string) []int32 {
	t.Helper()
	v, err := md.Int32s(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func integer(t testing.TB, md *attn.Metadata, name string) int64 {
	t.Helper()
	v, err := md.Int(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func boolean(t testing.TB, md *attn.Metadata, name string) bool {
	t.Helper()
	v, err := md.Bool(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

func isNone(t testing.TB, md *attn.Metadata, name string) bool {
	t.Helper()
	f, err := md.Get(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return f.IsNone()
}
