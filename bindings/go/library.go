package attn

/*
#include <stdlib.h>
#include "capi.h"
*/
import "C"

import (
	"fmt"
	"os"
	"strings"
	"unsafe"
)

// Library is a loaded libattn: its path and its function table. It stays loaded for the life of
// the process (libattn and its plugins may hold state that outlives any Go value), so it has no
// Close. Any number of goroutines may use one Library.
type Library struct {
	api     *C.gattn_api_t
	path    string
	version Version
	// openCount is BackendCount() when Open ran: the built-in backends, for a library older than
	// 1.3 that cannot say which backends are built in (the registry lists them first).
	openCount int
}

// Version is a libattn version.
type Version struct {
	Major, Minor, Patch uint32
}

// String gives "1.2.0".
func (v Version) String() string { return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch) }

// cString converts s for C, refusing a NUL byte (which C would take for the end) with an error
// that names what it is.
func cString(what, s string) (*C.char, error) {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return nil, invalid("%s %q contains a NUL byte at %d", what, s, i)
	}
	return C.CString(s), nil
}

func freeString(s *C.char) { C.free(unsafe.Pointer(s)) }

// Open loads libattn with dlopen and resolves every function of attn_c.h with dlsym. The path is
// path when it is not empty, else $ATTN_LIBRARY, else DefaultLibraryName ("libattn.so.1")
// through the system loader's search path. It then checks the version with attn_check_version
// against RequiredMajor.RequiredMinor. Errors: ErrNotFound (no such file, not a shared
// library, a missing symbol; the message quotes dlerror or names the symbol), ErrABIMismatch.
func Open(path string) (*Library, error) {
	if path == "" {
		path = os.Getenv(LibraryEnv)
	}
	if path == "" {
		path = DefaultLibraryName
	}
	cpath, err := cString("library path", path)
	if err != nil {
		return nil, err
	}
	defer freeString(cpath)
	var detail [1024]C.char
	var api *C.gattn_api_t
	switch C.gattn_open(cpath, &api, &detail[0], C.size_t(len(detail))) {
	case C.GATTN_OPENED:
	case C.GATTN_SYMBOL_MISSING:
		return nil, newError(ErrNotFound, "%s: symbol %s is missing: it is not libattn %d.%d",
			path, C.GoString(&detail[0]), RequiredMajor, RequiredMinor)
	case C.GATTN_NO_MEMORY:
		return nil, newError(ErrOutOfMemory, "cannot load %s: out of memory", path)
	default:
		return nil, newError(ErrNotFound, "cannot load %s: %s", path, C.GoString(&detail[0]))
	}
	lib := &Library{api: api, path: path}
	var major, minor, patch C.uint32_t
	C.gattn_get_version(api, &major, &minor, &patch)
	lib.version = Version{uint32(major), uint32(minor), uint32(patch)}
	if err := lib.CheckVersion(RequiredMajor, RequiredMinor); err != nil {
		return nil, err
	}
	lib.openCount = lib.BackendCount()
	return lib, nil
}

// Path is the path Open loaded (the argument, $ATTN_LIBRARY, or DefaultLibraryName).
func (l *Library) Path() string { return l.path }

// Version is the loaded library's version (attn_get_version).
func (l *Library) Version() Version { return l.version }

// CheckVersion asks the library whether it serves a caller compiled against major.minor
// (attn_check_version): nil, or an *Error with ErrABIMismatch stating both versions.
func (l *Library) CheckVersion(major, minor uint32) error {
	return l.takeError(C.gattn_check_version(l.api, C.uint32_t(major), C.uint32_t(minor)))
}

// StatusString is the library's description of a status code (attn_status_string).
func (l *Library) StatusString(code int32) string {
	return C.GoString(C.gattn_status_string(l.api, C.int32_t(code)))
}

// FunctionNames lists the ABI functions the binding resolves, in the order of attn_c.h's
// ATTN_API_FUNCTIONS (ABI 1.0's in header order, then 1.3's, which an older library may lack).
func FunctionNames() []string {
	n := int(C.gattn_function_count())
	names := make([]string, n)
	for i := range names {
		names[i] = C.GoString(C.gattn_function_name(C.int(i)))
	}
	return names
}

// DeviceCount is the number of devices of a type the library can use (attn_device_count): 1
// for DeviceCPU; for DeviceCUDA the visible GPUs, or ErrUnsupported when the library was built
// without CUDA.
func (l *Library) DeviceCount(t DeviceType) (int, error) {
	var n C.int32_t
	if err := l.takeError(C.gattn_device_count(l.api, C.int32_t(t), &n)); err != nil {
		return 0, err
	}
	return int(n), nil
}
