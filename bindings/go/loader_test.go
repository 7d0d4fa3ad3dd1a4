package attn_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"libattn.dev/attn"
)

// Loading: from a path, from $ATTN_LIBRARY, the version check, clean errors for a missing
// file, a file that is no library and a library without the ABI's symbols; the function table
// against the header.

func TestOpenWithAPathChecksTheVersion(t *testing.T) {
	path := libraryPath(t)
	l := get(attn.Open(path))(t)
	is(t, "Path", l.Path(), path)
	// one version number: the binding requires the ABI of the header it was generated from
	is(t, "RequiredMajor", attn.RequiredMajor, attn.HeaderMajor)
	is(t, "RequiredMinor", attn.RequiredMinor, attn.HeaderMinor)
	v := l.Version()
	is(t, "major", v.Major, attn.RequiredMajor)
	if v.Minor < attn.RequiredMinor {
		t.Fatalf("library minor %d is older than the binding's %d.%d", v.Minor, attn.RequiredMajor, attn.RequiredMinor)
	}
	is(t, "String", v.String(), fmt.Sprintf("1.%d.%d", v.Minor, v.Patch))
	ok(t, l.CheckVersion(attn.RequiredMajor, attn.RequiredMinor))
	ok(t, l.CheckVersion(1, 0))
	wantError(t, l.CheckVersion(2, 0), attn.ErrABIMismatch, "the caller was compiled against libattn 2.0 but the loaded library is 1.")
	wantError(t, l.CheckVersion(1, v.Minor+1), attn.ErrABIMismatch)
}

func TestOpenWithoutAPathReadsTheEnvironment(t *testing.T) {
	path := libraryPath(t)
	l := get(attn.Open(""))(t)
	is(t, "Path", l.Path(), path)

	t.Setenv("ATTN_LIBRARY", "/nonexistent/from-env/libattn.so.1")
	_, err := attn.Open("")
	wantError(t, err, attn.ErrNotFound, "/nonexistent/from-env/libattn.so.1")
	l = get(attn.Open(path))(t) // an explicit path wins over the environment
	is(t, "Path", l.Path(), path)

	// nothing set: the SONAME through the system loader (not installed here, or installed)
	t.Setenv("ATTN_LIBRARY", "")
	l, err = attn.Open("")
	if err != nil {
		wantError(t, err, attn.ErrNotFound, "libattn.so.1")
	} else {
		is(t, "Path", l.Path(), attn.DefaultLibraryName)
	}
}

func TestABadPathIsACleanError(t *testing.T) {
	_, err := attn.Open("/nonexistent/dir/libattn.so.1")
	wantError(t, err, attn.ErrNotFound, "/nonexistent/dir/libattn.so.1", "No such file")
	_, err = attn.Open("libattn_that_does_not_exist.so.1")
	wantError(t, err, attn.ErrNotFound, "libattn_that_does_not_exist.so.1")
	notALibrary := get(filepath.Abs("capi.c"))(t)
	_, err = attn.Open(notALibrary)
	wantError(t, err, attn.ErrNotFound, "capi.c", "invalid ELF header")
	_, err = attn.Open("lib\x00attn")
	wantError(t, err, attn.ErrInvalidArgument, "NUL byte at 3")
	// the example plugin is a shared library that exports only attn_plugin_entry
	_, err = attn.Open(examplePluginPath(t))
	wantError(t, err, attn.ErrNotFound, "symbol attn_error_code is missing",
		fmt.Sprintf("is not libattn %d.%d", attn.RequiredMajor, attn.RequiredMinor))
}

// The binding resolves every ATTN_API function of attn_c.h and calls each one from Go.
func TestEveryABIFunctionIsWrapped(t *testing.T) {
	header := string(get(os.ReadFile("../../include/attn_c.h"))(t))
	decl := regexp.MustCompile(`ATTN_API[^;(]*?\b(attn_[a-z0-9_]+)\s*\(`)
	var want []string
	for _, m := range decl.FindAllStringSubmatch(header, -1) {
		want = append(want, m[1])
	}
	if len(want) < 50 {
		t.Fatalf("found only %d ATTN_API declarations in attn_c.h", len(want))
	}
	// the binding's table is the header's ATTN_API_FUNCTIONS, in its order
	list := regexp.MustCompile(`(?m)^#define ATTN_API_FUNCTIONS_1_[0-9]+\(X\)\s*\\\n((?:.*\\\n)*.*)$`)
	entry := regexp.MustCompile(`\bX\((attn_[a-z0-9_]+)\)`)
	var table []string
	for _, m := range list.FindAllStringSubmatch(header, -1) {
		for _, e := range entry.FindAllStringSubmatch(m[1], -1) {
			table = append(table, e[1])
		}
	}
	equal(t, "FunctionNames()", attn.FunctionNames(), table)
	sorted := append([]string(nil), want...)
	sort.Strings(sorted)
	sort.Strings(table)
	equal(t, "ATTN_API_FUNCTIONS against the ATTN_API declarations", table, sorted)

	files := get(filepath.Glob("*.go"))(t)
	var source strings.Builder
	for _, f := range files {
		if !strings.HasSuffix(f, "_test.go") {
			source.Write(get(os.ReadFile(f))(t))
		}
	}
	var missing []string
	for _, name := range want {
		if !strings.Contains(source.String(), "C.g"+name+"(") {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("no Go code calls %v", missing)
	}
}

func TestStatusStringsAreTheLibrarys(t *testing.T) {
	l := library(t)
	for code := int32(0); code <= 8; code++ {
		is(t, "status", attn.Code(code).Error(), l.StatusString(code))
	}
	is(t, "status 99", l.StatusString(99), "unknown status")
	is(t, "Code(99)", attn.Code(99).Error(), "unknown status")
}

func TestDeviceCount(t *testing.T) {
	l := library(t)
	is(t, "CPU devices", get(l.DeviceCount(attn.DeviceCPU))(t), 1)
	// built without CUDA: unsupported; with CUDA: a count (0 without a GPU)
	n, err := l.DeviceCount(attn.DeviceCUDA)
	if err != nil {
		wantError(t, err, attn.ErrUnsupported)
	} else if n < 0 {
		t.Fatalf("CUDA device count %d", n)
	}
}

// capi_gen.h and fields_gen.go are what scripts/gen_bindings.py makes of attn_c.h (and of
// src/core/abi_fields.h) today (after a header change: scripts/gen_bindings.sh, and commit).
func TestGeneratedTrampolinesMatchTheHeader(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 to run scripts/gen_bindings.py")
	}
	out := t.TempDir()
	cmd := exec.Command(python, "../../scripts/gen_bindings.py", "--root", "../..", "--out", out, "go")
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("gen_bindings.py: %v\n%s", err, msg)
	}
	for _, name := range []string{"capi_gen.h", "fields_gen.go"} {
		want, err := os.ReadFile(filepath.Join(out, "bindings", "go", name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("%s drifted from include/attn_c.h: run scripts/gen_bindings.sh", name)
		}
	}
}
