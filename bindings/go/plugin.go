package attn

/*
#include "capi.h"
*/
import "C"

import (
	"runtime"
	"sync"
)

// Plugin is a loaded plugin library whose backends joined the registry (attn_plugin_t).
type Plugin struct {
	lib    *Library
	name   string
	mu     sync.Mutex
	ptr    *C.attn_plugin_t
	closed bool
}

// LoadPlugin loads a plugin with dlopen and registers its backends (attn_plugin_load). Errors:
// ErrNotFound (no file, no entry point), ErrABIMismatch, ErrInvalidArgument (a malformed table,
// a backend name already registered).
func (l *Library) LoadPlugin(path string) (*Plugin, error) {
	cpath, err := cString("plugin path", path)
	if err != nil {
		return nil, err
	}
	defer freeString(cpath)
	var ptr *C.attn_plugin_t
	if err := l.takeError(C.gattn_plugin_load(l.api, cpath, &ptr)); err != nil {
		return nil, err
	}
	p := &Plugin{lib: l, ptr: ptr, name: C.GoString(C.gattn_plugin_name(l.api, ptr))}
	runtime.SetFinalizer(p, (*Plugin).finalize)
	return p, nil
}

// Name is the plugin's name from its table.
func (p *Plugin) Name() string { return p.name }

// Close removes the plugin's backends from the registry and closes it (attn_plugin_unload).
// While builders of its backends exist it returns ErrBusy and changes nothing: close them and
// call again. Once closed, later calls do nothing.
func (p *Plugin) Close() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil
	}
	if err := p.lib.takeError(C.gattn_plugin_unload(p.lib.api, p.ptr)); err != nil {
		return err
	}
	p.closed = true
	p.ptr = nil
	runtime.SetFinalizer(p, nil)
	return nil
}

// finalize unloads an unreachable plugin; while its builders exist it stays loaded (the
// registry keeps working), which is safe and only leaks the handle.
func (p *Plugin) finalize() {
	_ = p.Close()
}
