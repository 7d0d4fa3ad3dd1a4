package attn_test

import (
	"runtime"
	"testing"
	"time"

	"libattn.dev/attn"
)

// Plugins: the example plugin loaded from $ATTN_EXAMPLE_PLUGIN, its backend built, unload
// refused while a builder exists, Close idempotent, and the finalizers of an unreachable
// builder and plugin.

func TestAMissingPluginIsACleanError(t *testing.T) {
	_, err := library(t).LoadPlugin("/nonexistent/libplugin.so")
	wantError(t, err, attn.ErrNotFound, "/nonexistent/libplugin.so")
	_, err = library(t).LoadPlugin("lib\x00plugin.so")
	wantError(t, err, attn.ErrInvalidArgument, "NUL byte")
}

func TestExamplePluginLifecycle(t *testing.T) {
	registryMu.Lock()
	defer registryMu.Unlock()
	l := library(t)
	before := l.BackendCount()
	plugin := get(l.LoadPlugin(examplePluginPath(t)))(t)
	is(t, "Name", plugin.Name(), "example_plugin")
	is(t, "BackendCount", l.BackendCount(), before+1)
	is(t, "BackendName", get(l.BackendName(before))(t), "EXAMPLE_PAGED")
	_, err := l.LoadPlugin(examplePluginPath(t))
	wantError(t, err, attn.ErrInvalidArgument, "EXAMPLE_PAGED")
	is(t, "EXAMPLE_PAGED level", get(l.BackendCudagraphSupport("EXAMPLE_PAGED", spec(), config(90)))(t), attn.CGNever)

	b := get(l.NewBuilder("EXAMPLE_PAGED", spec(), config(90)))(t)
	is(t, "ReorderBatchThreshold", get(b.ReorderBatchThreshold())(t), int32(1))
	is(t, "SupportsUpdateBlockTable", get(b.SupportsUpdateBlockTable())(t), true)
	s := demoSample()
	c := s.common(t)
	md := get(b.Build(0, c, false))(t)
	is(t, "kind", md.Kind(), "EXAMPLE_PAGED")
	is(t, "fields", md.Len(), 8)
	equal(t, "context_lens", i32s(t, md, "context_lens"), context)
	is(t, "num_decodes", integer(t, md, "num_decodes"), 3)
	equal(t, "seq_lens", i32s(t, md, "seq_lens"), s.seqLens)
	// libattn 1.2's clone copies the plugin builder's context_lens buffer (1.1's kept viewing
	// it, and the binding refuses such clones there): the copy survives the next build
	kept := get(md.Clone())(t)
	defer kept.Close()
	other := newSample([]int32{4, 5, 6}, []int32{1, 1, 1}, 1)
	md2 := get(b.Build(0, other.common(t), false))(t)
	equal(t, "context_lens of the next build", i32s(t, md2, "context_lens"), []int32{4, 5, 6})
	equal(t, "the clone's context_lens", i32s(t, kept, "context_lens"), context)
	md = get(b.Build(0, c, false))(t)
	_, err = b.Build(16, c, false)
	wantError(t, err, attn.ErrUnsupported, "EXAMPLE_PAGED has no cascade attention")

	// busy while its builder exists: nothing changes
	defer plugin.Close()
	wantError(t, plugin.Close(), attn.ErrBusy, "EXAMPLE_PAGED")
	is(t, "still registered", l.BackendCount(), before+1)
	ok(t, b.Close())
	ok(t, plugin.Close())
	ok(t, plugin.Close()) // idempotent
	is(t, "BackendCount after unload", l.BackendCount(), before)
	for _, name := range get(l.Backends())(t) {
		if name == "EXAMPLE_PAGED" {
			t.Fatal("EXAMPLE_PAGED is still registered")
		}
	}
	_, err = l.NewBuilder("EXAMPLE_PAGED", spec(), config(90))
	wantError(t, err, attn.ErrNotFound, "EXAMPLE_PAGED")
}

// eventually runs GCs until cond holds (finalizers run after a GC, on their own goroutine).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s did not happen", what)
		}
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
}

func TestFinalizersReleaseUnreachableBuildersAndPlugins(t *testing.T) {
	registryMu.Lock()
	defer registryMu.Unlock()
	l := library(t)
	before := l.BackendCount()
	plugin := get(l.LoadPlugin(examplePluginPath(t)))(t)
	func() {
		b := get(l.NewBuilder("EXAMPLE_PAGED", spec(), config(90)))(t)
		get(b.Build(0, demoSample().common(t), false))(t)
		// b and its metadata become unreachable here
	}()
	// the plugin refuses to unload while the builder lives; its finalizer destroys it
	eventually(t, "the builder's finalizer", func() bool { return plugin.Close() == nil })
	is(t, "BackendCount", l.BackendCount(), before)

	// an unreachable plugin is unloaded by its finalizer
	func() { get(l.LoadPlugin(examplePluginPath(t)))(t) }()
	is(t, "BackendCount with the plugin", l.BackendCount(), before+1)
	eventually(t, "the plugin's finalizer", func() bool { return l.BackendCount() == before })
}
