// Command attn-demo is the libattn demo in Go, as examples/c/attn_demo.c: it loads libattn with
// dlopen (through the Go binding, bindings/go), lists every backend with its CUDA graph support
// (sm90/sm80/sm100) and reorder threshold, builds FLASH_ATTN metadata for a mixed batch
// (decodes, a chunked prefill, a fresh prefill) on the host and prints it, then the same batch
// through every other backend (a plugin's too) and two of vLLM's wrappers (chunked local
// attention, KV-sharing fast prefill).
//
//	attn-demo [path/to/libattn.so.1] [--plugin path/to/plugin.so]
//
// Without a path it uses $ATTN_LIBRARY, then "libattn.so.1" from the loader's search path.
package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"libattn.dev/attn"
)

const (
	numReqs     = 5
	blockSize   = 16
	maxModelLen = 1024
	width       = maxModelLen / blockSize
)

// mlaSpec is vLLM's MLAAttentionSpec: one 576-wide latent head; block 128 suits every MLA kernel.
func mlaSpec() attn.KVCacheSpec {
	s := attn.NewKVCacheSpec(128, 1, 576)
	s.Kind = attn.KVMLA
	return s
}

// mla256Spec is mlaSpec with block 256 (DeepSeek V4's sparse MLA kernels), tried after it.
func mla256Spec() attn.KVCacheSpec {
	s := mlaSpec()
	s.BlockSize = 256
	return s
}

// mambaSpec is "none" cache mode; Mamba2 scans 16-token chunks.
func mambaSpec() attn.KVCacheSpec {
	s := attn.NewKVCacheSpec(blockSize, 1, 1)
	s.Kind = attn.KVMamba
	s.MambaChunkSize = 16
	return s
}

// backendBuilder is a builder of a backend on the first of the demo's specs (full attention, MLA,
// Mamba) whose kind the backend accepts (attn_backend_info) and that it builds for, with cfg's
// cache dtype and then FP8 (the backends whose caches are FP8 only, as TOKENSPEED_MLA): a spec
// per kind, no list of backend names. A plugin's backend accepts every kind as far as the
// library knows, so its builder's ErrUnsupported moves on to the next kind. It returns the spec
// and the cache dtype the builder was made with.
func backendBuilder(lib *attn.Library, info attn.BackendInfo, spec attn.KVCacheSpec,
	cfg attn.BuilderConfig) (attn.KVCacheSpec, attn.KVDtype, *attn.Builder, error) {
	candidates := []struct {
		kind attn.KVCacheKind
		spec attn.KVCacheSpec
	}{{attn.KVFullAttention, spec}, {attn.KVMLA, mlaSpec()}, {attn.KVMLA, mla256Spec()},
		{attn.KVMamba, mambaSpec()}}
	var last error
	for _, c := range candidates {
		if !info.Accepts(c.kind) {
			continue
		}
		for _, dtype := range []attn.KVDtype{cfg.CacheDtype, attn.KVDtypeFP8E4M3} {
			withDtype := cfg
			withDtype.CacheDtype = dtype
			b, err := lib.NewBuilder(info.Name, c.spec, withDtype)
			if err == nil {
				return c.spec, dtype, b, nil
			}
			var e *attn.Error
			if !errors.As(err, &e) || e.Code != attn.ErrUnsupported {
				return spec, cfg.CacheDtype, nil, err
			}
			last = err
		}
	}
	if last == nil { // no spec of a kind it accepts (INKLING_SCONV_SWA: sliding window only)
		last = &attn.Error{Code: attn.ErrUnsupported,
			Message: fmt.Sprintf("%s builds on none of the demo's specs", info.Name)}
	}
	return spec, cfg.CacheDtype, nil, last
}

// batch is the sample batch's data: three decodes, a chunked prefill (64 cached, 32 scheduled)
// and a fresh prefill; block 0 is vLLM's null block.
type batch struct {
	queryStartLoc, seqLens, blockTable []int32
	slotMapping, positions             []int64
}

func makeBatch() *batch {
	context := [numReqs]int32{40, 99, 16, 64, 0}
	query := [numReqs]int32{1, 1, 1, 32, 20}
	b := &batch{queryStartLoc: []int32{0}, blockTable: make([]int32, numReqs*width)}
	next := int32(1)
	for r := 0; r < numReqs; r++ {
		seq := context[r] + query[r]
		b.seqLens = append(b.seqLens, seq)
		b.queryStartLoc = append(b.queryStartLoc, b.queryStartLoc[r]+query[r])
		for j := 0; j < int((seq+blockSize-1)/blockSize); j++ {
			b.blockTable[r*width+j] = next
			next++
		}
		for p := context[r]; p < seq; p++ {
			block := int64(b.blockTable[r*width+int(p/blockSize)])
			b.slotMapping = append(b.slotMapping, block*blockSize+int64(p%blockSize))
			b.positions = append(b.positions, int64(p))
		}
	}
	return b
}

// common is the batch as vLLM 0.33 describes it: the last two requests are still in their
// prompts (is_prefilling, which the Mamba family requires); the tokens' positions (which
// DEEPSEEK_V41_COMPRESSOR requires).
func (b *batch) common() (*attn.CommonMetadata, error) {
	c, err := attn.NewCommonMetadata(b.queryStartLoc, b.seqLens, b.blockTable, width, b.slotMapping)
	if err != nil {
		return nil, err
	}
	c.IsPrefilling = attn.Slice([]int32{0, 0, 0, 1, 1})
	c.Positions = attn.Slice(b.positions)
	return c, nil
}

// demoConfig is the demo's engine config: 256 sequences, 8192 tokens, 32 query heads, a KV
// cache of 4096 blocks (FLEX_ATTENTION needs the count), compute capability `capability`.
func demoConfig(capability int32) attn.BuilderConfig {
	c := attn.NewBuilderConfig(256, 8192, maxModelLen, 32)
	c.DeviceCapability = capability
	c.NumGPUBlocks = 4096
	return c
}

// cFloat formats like C's printf("%g").
func cFloat(v float64) string {
	switch {
	case math.IsInf(v, 1):
		return "inf"
	case math.IsInf(v, -1):
		return "-inf"
	case math.IsNaN(v):
		return "nan"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

func tensorValues(t *attn.TensorView) []string {
	var out []string
	switch t.DType() {
	case attn.Int32:
		v, err := t.Int32s()
		if err != nil {
			return nil
		}
		for _, x := range v {
			out = append(out, strconv.FormatInt(int64(x), 10))
		}
	case attn.Int64:
		v, err := t.Int64s()
		if err != nil {
			return nil
		}
		for _, x := range v {
			out = append(out, strconv.FormatInt(x, 10))
		}
	case attn.Float32:
		v, err := t.Float32s()
		if err != nil {
			return nil
		}
		for _, x := range v {
			out = append(out, cFloat(float64(x)))
		}
	}
	return out
}

func formatTensor(t *attn.TensorView) string {
	shape := t.Shape()
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.FormatInt(d, 10)
	}
	var s string
	if len(shape) == 1 {
		s = fmt.Sprintf("tensor (%s,) %s", dims[0], t.DType())
	} else {
		s = fmt.Sprintf("tensor (%s) %s", strings.Join(dims, ", "), t.DType())
	}
	if t.Device().Type != attn.DeviceCPU {
		return s + fmt.Sprintf(" on device type %d", t.Device().Type)
	}
	if len(shape) > 2 {
		return s // scratch buffers: the shape says enough
	}
	values := tensorValues(t)
	if values == nil {
		return s
	}
	if len(shape) == 2 { // the first row only
		s += " row 0:"
		n := int(shape[1])
		if n > 8 {
			n = 8
		}
		if n > len(values) {
			n = len(values)
		}
		values = values[:n]
	}
	shown := len(values)
	if shown > 12 {
		shown = 12
	}
	more := ""
	if shown < len(values) {
		more = ", ..."
	}
	return s + " [" + strings.Join(values[:shown], ", ") + more + "]"
}

func printField(f attn.Field) {
	var value string
	switch f.Kind {
	case attn.FieldNone:
		value = "None"
	case attn.FieldInt:
		value = strconv.FormatInt(f.Int, 10)
	case attn.FieldBool:
		value = "False"
		if f.Bool() {
			value = "True"
		}
	case attn.FieldFloat:
		value = cFloat(f.Float)
	case attn.FieldTensor:
		value = formatTensor(f.Tensor)
	default:
		value = "?"
	}
	fmt.Printf("  %-32s %s\n", f.Name, value)
}

func printFields(md *attn.Metadata, names []string) error {
	for _, name := range names {
		f, err := md.Get(name)
		if err != nil {
			return err
		}
		printField(f)
	}
	return nil
}

// printNotNone prints every field that is not None.
func printNotNone(md *attn.Metadata) error {
	fields, err := md.Fields()
	if err != nil {
		return err
	}
	for _, f := range fields {
		if !f.IsNone() {
			printField(f)
		}
	}
	return nil
}

func listBackends(lib *attn.Library, spec attn.KVCacheSpec) error {
	infos, err := lib.BackendInfos()
	if err != nil {
		return err
	}
	fmt.Printf("%d backend(s):\n", len(infos))
	fmt.Printf("  %-16s %-29s %-29s %-29s %-8s %s\n", "backend", "cudagraph (sm90)", "cudagraph (sm80)",
		"cudagraph (sm100)", "reorder", "update_block_table")
	for _, info := range infos {
		name := info.Name
		kindSpec, cacheDtype, b, err := backendBuilder(lib, info, spec, demoConfig(90))
		var unsupported *attn.Error
		if err != nil && errors.As(err, &unsupported) && unsupported.Code == attn.ErrUnsupported {
			// a backend that needs its model's settings (DEEPSEEK_V41_SPARSE_INDEXER)
			fmt.Printf("  %-16s (refused on the demo's specs and configs: it needs its model's settings)\n", name)
			continue
		}
		if err != nil {
			return err
		}
		var levels []string
		for _, capability := range []int32{90, 80, 100} {
			cfg := demoConfig(capability)
			cfg.CacheDtype = cacheDtype
			level, err := lib.BackendCudagraphSupport(name, kindSpec, cfg)
			if err != nil {
				b.Close()
				return err
			}
			levels = append(levels, level.String())
		}
		threshold, err := b.ReorderBatchThreshold()
		if err != nil {
			b.Close()
			return err
		}
		update, err := b.SupportsUpdateBlockTable()
		b.Close()
		if err != nil {
			return err
		}
		reorder := "None"
		if threshold != attn.NoReorder {
			reorder = strconv.Itoa(int(threshold))
		}
		yes := "no"
		if update {
			yes = "yes"
		}
		fmt.Printf("  %-16s %-29s %-29s %-29s %-8s %s\n", name, levels[0], levels[1], levels[2], reorder, yes)
	}
	return nil
}

// buildOnce creates a builder of backend, builds the batch and prints the metadata kind and its
// field count; the caller closes the builder (which owns the metadata).
func buildOnce(lib *attn.Library, backend string, spec attn.KVCacheSpec, cfg attn.BuilderConfig,
	common *attn.CommonMetadata) (*attn.Builder, *attn.Metadata, error) {
	b, err := lib.NewBuilder(backend, spec, cfg)
	if err != nil {
		return nil, nil, err
	}
	md, err := b.Build(0, common, false)
	if err != nil {
		b.Close()
		return nil, nil, err
	}
	fmt.Printf("\n%s (%d fields):\n", md.Kind(), md.Len())
	return b, md, nil
}

// buildAndShow builds the batch with backend and prints the metadata kind, its field count and
// fields (every field that is not None when fields is empty).
func buildAndShow(lib *attn.Library, backend string, spec attn.KVCacheSpec, cfg attn.BuilderConfig,
	common *attn.CommonMetadata, fields []string) error {
	b, md, err := buildOnce(lib, backend, spec, cfg, common)
	if err != nil {
		return err
	}
	defer b.Close()
	if len(fields) == 0 {
		return printNotNone(md)
	}
	return printFields(md, fields)
}

// showOwnFields builds the batch with backend and prints the set fields that FLASH_ATTN's
// metadata (reference: its field names) lacks, what makes the backend's metadata its own: its
// tensors first, then its scalars, three of each at most.
func showOwnFields(lib *attn.Library, backend string, spec attn.KVCacheSpec, cfg attn.BuilderConfig,
	common *attn.CommonMetadata, reference map[string]bool) error {
	b, md, err := buildOnce(lib, backend, spec, cfg, common)
	if err != nil {
		return err
	}
	defer b.Close()
	fields, err := md.Fields()
	if err != nil {
		return err
	}
	for _, tensors := range []bool{true, false} {
		shown := 0
		for _, f := range fields {
			if f.IsNone() || reference[f.Name] || (f.Kind == attn.FieldTensor) != tensors || shown == 3 {
				continue
			}
			printField(f)
			shown++
		}
	}
	return nil
}

func everyBackend(lib *attn.Library, b *batch, spec attn.KVCacheSpec, reference map[string]bool) error {
	hopper := demoConfig(90)
	common, err := b.common()
	if err != nil {
		return err
	}
	infos, err := lib.BackendInfos()
	if err != nil {
		return err
	}
	fmt.Printf("\nThe same batch through the other backends (the fields FLASH_ATTN lacks, a few each):\n")
	for _, info := range infos {
		if info.Origin != attn.BackendBuiltin || info.Name == "FLASH_ATTN" || !info.Accepts(attn.KVFullAttention) {
			continue
		}
		if err := showOwnFields(lib, info.Name, spec, hopper, common, reference); err != nil {
			var e *attn.Error
			if errors.As(err, &e) && e.Code == attn.ErrUnsupported {
				continue // a family of its own (MLA, Mamba): below
			}
			return err
		}
	}
	fmt.Printf("\nThe Mamba family builds for a MAMBA spec (MambaSpec: state index = block table column 0, 16-token scan chunks):\n")
	if err := buildAndShow(lib, "MAMBA2", mambaSpec(), hopper, common, []string{"num_decodes", "num_prefills",
		"state_indices_tensor_d", "state_indices_tensor_p", "query_start_loc_p", "has_initial_states_p",
		"cu_chunk_seqlen_p", "seq_idx_p", "last_chunk_indices_p"}); err != nil {
		return err
	}
	fmt.Printf("\nThe MLA family builds for an MLA spec (block 128, one 576-wide latent head):\n")
	if err := buildAndShow(lib, "FLASHMLA", mlaSpec(), hopper, common, []string{"num_decodes", "num_prefills",
		"decode_seq_lens", "prefill_query_start_loc", "prefill_chunked_context_chunk_cu_seq_lens",
		"prefill_chunked_context_chunk_num_context_tokens", "chunked_prefill_workspace_size"}); err != nil {
		return err
	}
	for _, info := range infos { // the plugins' backends, every field
		if info.Origin != attn.BackendPlugin {
			continue
		}
		kindSpec, cacheDtype, pb, err := backendBuilder(lib, info, spec, hopper)
		if err != nil {
			return err
		}
		pb.Close()
		pluginConfig := hopper
		pluginConfig.CacheDtype = cacheDtype
		if err := buildAndShow(lib, info.Name, kindSpec, pluginConfig, common, nil); err != nil {
			return err
		}
	}

	fmt.Printf("\nvLLM's wrappers, asked for by the spec and the config:\n")
	local := spec
	local.Kind = attn.KVChunkedLocalAttention // Llama-4-style local attention
	local.AttentionChunkSize = 32
	level, err := lib.BackendCudagraphSupport("FLASH_ATTN", local, hopper)
	if err != nil {
		return err
	}
	fmt.Printf("  FLASH_ATTN with a CHUNKED_LOCAL_ATTENTION spec (chunk 32): CUDA graph support %s\n", level)
	if err := buildAndShow(lib, "FLASH_ATTN", local, hopper, common,
		[]string{"query_start_loc", "seq_lens", "block_table", "virtual_req"}); err != nil {
		return err
	}
	fast := hopper
	fast.KVSharingFastPrefill = true // KV-sharing layers compute only the logits tokens
	withLogits, err := b.common()
	if err != nil {
		return err
	}
	withLogits.LogitsIndicesPadded = attn.Slice([]int32{0, 1, 2, 34, 54}) // the last token of each request
	withLogits.NumLogitsIndices = numReqs
	return buildAndShow(lib, "FLASH_ATTN", spec, fast, withLogits,
		[]string{"query_start_loc", "num_actual_tokens", "max_query_len", "logits_indices_padded", "num_logits_indices"})
}

func run(path, pluginPath string) error {
	lib, err := attn.Open(path) // loads, resolves every symbol, checks ABI 1.1
	if err != nil {
		return err
	}
	fmt.Printf("libattn %s loaded with dlopen from %s\n", lib.Version(), lib.Path())
	if pluginPath != "" {
		plugin, err := lib.LoadPlugin(pluginPath)
		if err != nil {
			return err
		}
		defer func() {
			if err := plugin.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "attn-demo: unloading the plugin: %v\n", err)
			}
		}()
		fmt.Printf("plugin loaded from %s\n", pluginPath)
	}

	spec := attn.NewKVCacheSpec(blockSize, 8, 128)
	fmt.Printf("\nKV cache spec: full attention, block_size %d, 8 KV heads, head_size 128, bf16\n", blockSize)
	fmt.Println("(the MLA family for an MLA spec: block_size 128, one 576-wide latent head; the Mamba family for a MAMBA spec)")
	if err := listBackends(lib, spec); err != nil {
		return err
	}

	builder, err := lib.NewBuilder("FLASH_ATTN", spec, demoConfig(90))
	if err != nil {
		return err
	}
	defer builder.Close()
	b := makeBatch()
	fmt.Printf("\nSample batch: 3 decodes (seq 41, 100, 17), a chunked prefill (64 cached + 32 new),\n"+
		"a fresh prefill (20 tokens); %d tokens, block_size %d, host build.\n\n", len(b.slotMapping), blockSize)
	common, err := b.common()
	if err != nil {
		return err
	}
	md, err := builder.Build(0, common, false)
	if err != nil {
		return err
	}
	fields, err := md.Fields()
	if err != nil {
		return err
	}
	reference := map[string]bool{} // FLASH_ATTN's field names
	for _, f := range fields {
		reference[f.Name] = true
	}
	fmt.Printf("FLASH_ATTN metadata (%d fields; None fields omitted):\n", md.Len())
	if err := printNotNone(md); err != nil {
		return err
	}

	fmt.Printf("\nThe same batch with a 16-token common prefix (cascade attention):\n")
	md, err = builder.Build(16, common, false)
	if err != nil {
		return err
	}
	if err := printFields(md, []string{"use_cascade", "common_prefix_len", "cu_prefix_query_lens", "prefix_kv_lens",
		"suffix_kv_lens", "scheduler_max_seqlen_k"}); err != nil {
		return err
	}

	if err := everyBackend(lib, b, spec, reference); err != nil {
		return err
	}

	fmt.Printf("\nBad input gives an error, not a crash (seq_lens[2] set below its query length):\n")
	b.seqLens[2] = 0
	if common, err = b.common(); err != nil {
		return err
	}
	if _, err := builder.Build(0, common, false); err != nil {
		var e *attn.Error
		if !errors.As(err, &e) {
			return err
		}
		fmt.Printf("  %v\n", e)
	} else {
		fmt.Printf("  (the build unexpectedly succeeded)\n")
	}
	return nil
}

func main() {
	var path, plugin string
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		if args[i] == "--plugin" {
			if i+1 >= len(args) {
				fmt.Fprintln(os.Stderr, "attn-demo: --plugin needs a path")
				os.Exit(2)
			}
			i++
			plugin = args[i]
		} else {
			path = args[i]
		}
	}
	if err := run(path, plugin); err != nil {
		fmt.Fprintf(os.Stderr, "attn-demo: %v\n", err)
		os.Exit(1)
	}
}
