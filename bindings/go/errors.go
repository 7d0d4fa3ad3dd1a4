package attn

/*
#include "capi.h"
*/
import "C"

import "fmt"

// Code is a libattn status code (attn_status_code_t); the numbers never change. A Code is
// also an error, so that errors.Is(err, attn.ErrBusy) tells the code of an *Error.
type Code int32

// The codes.
const (
	OK                 Code = C.ATTN_OK
	ErrInvalidArgument Code = C.ATTN_ERR_INVALID_ARGUMENT
	ErrUnsupported     Code = C.ATTN_ERR_UNSUPPORTED
	ErrOutOfMemory     Code = C.ATTN_ERR_OUT_OF_MEMORY
	ErrCUDA            Code = C.ATTN_ERR_CUDA
	ErrNotFound        Code = C.ATTN_ERR_NOT_FOUND
	ErrABIMismatch     Code = C.ATTN_ERR_ABI_MISMATCH
	ErrBusy            Code = C.ATTN_ERR_BUSY
	ErrInternal        Code = C.ATTN_ERR_INTERNAL
)

// Error gives the code's description, the same text as attn_status_string ("invalid
// argument").
func (c Code) Error() string {
	switch c {
	case OK:
		return "ok"
	case ErrInvalidArgument:
		return "invalid argument"
	case ErrUnsupported:
		return "unsupported"
	case ErrOutOfMemory:
		return "out of memory"
	case ErrCUDA:
		return "CUDA error"
	case ErrNotFound:
		return "not found"
	case ErrABIMismatch:
		return "ABI mismatch"
	case ErrBusy:
		return "busy"
	case ErrInternal:
		return "internal error"
	}
	return "unknown status"
}

// String is Error.
func (c Code) String() string { return c.Error() }

// Error is a failure reported by libattn (or by the binding's own checks, with the same
// codes): the code and the message, which names the argument and the value.
type Error struct {
	Code    Code
	Message string
}

// Error formats the error as "[invalid argument] common->seq_lens[2]=0 is less than ...".
func (e *Error) Error() string { return fmt.Sprintf("[%s] %s", e.Code.Error(), e.Message) }

// Unwrap gives the code, so that errors.Is(err, attn.ErrInvalidArgument) works.
func (e *Error) Unwrap() error { return e.Code }

func newError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func invalid(format string, args ...any) error {
	return newError(ErrInvalidArgument, format, args...)
}

// takeError converts a libattn error into an *Error and releases it; nil for success.
func (l *Library) takeError(e *C.attn_error_t) error {
	if e == nil {
		return nil
	}
	err := &Error{
		Code:    Code(C.gattn_error_code(l.api, e)),
		Message: C.GoString(C.gattn_error_message(l.api, e)),
	}
	C.gattn_error_destroy(l.api, e)
	return err
}
