package inlay

// #include <inlay/inlay.h>
import "C"

import (
	"fmt"
	"runtime"
)

// Status is an inlay_status code. It implements error so that errors.Is(err,
// inlay.StatusIO) asks whether err is an inlay failure with that status.
type Status int

// The statuses of inlay.h (INLAY_OK, INLAY_ERR_*).
const (
	StatusOK              Status = C.INLAY_OK
	StatusInvalidArgument Status = C.INLAY_ERR_INVALID_ARGUMENT
	StatusIO              Status = C.INLAY_ERR_IO
	StatusBadFormat       Status = C.INLAY_ERR_BAD_FORMAT
	StatusTruncated       Status = C.INLAY_ERR_TRUNCATED
	StatusUnsupported     Status = C.INLAY_ERR_UNSUPPORTED
	StatusMissing         Status = C.INLAY_ERR_MISSING
	StatusShapeMismatch   Status = C.INLAY_ERR_SHAPE_MISMATCH
	StatusOutOfMemory     Status = C.INLAY_ERR_OUT_OF_MEMORY
	StatusCancelled       Status = C.INLAY_ERR_CANCELLED
	StatusContextFull     Status = C.INLAY_ERR_CONTEXT_FULL
	StatusKVFull          Status = C.INLAY_ERR_KV_FULL
	StatusBufferTooSmall  Status = C.INLAY_ERR_BUFFER_TOO_SMALL
	StatusBusy            Status = C.INLAY_ERR_BUSY
	StatusInvalidToken    Status = C.INLAY_ERR_INVALID_TOKEN
	StatusInvalidUTF8     Status = C.INLAY_ERR_INVALID_UTF8
	StatusBadWeights      Status = C.INLAY_ERR_BAD_WEIGHTS
	StatusInternal        Status = C.INLAY_ERR_INTERNAL
)

// String gives the library's name of the status ("INLAY_ERR_IO", ...).
func (s Status) String() string { return C.GoString(C.inlay_status_name(C.inlay_status(s))) }

// Error makes a bare Status usable as a target of errors.Is.
func (s Status) Error() string { return s.String() }

// Error is a failed inlay call: its status and the message inlay_last_error gave.
type Error struct {
	Status  Status
	Message string // "INLAY_ERR_IO: cannot open ..." from the library, or the wrapper's own
	cause   error  // for a cancellation through a context: ctx.Err()
}

func (e *Error) Error() string { return e.Message }

// Is matches a Status target with the same code.
func (e *Error) Is(target error) bool {
	s, ok := target.(Status)
	return ok && s == e.Status
}

// Unwrap gives ctx.Err() when a context cancelled the call, so errors.Is(err,
// context.Canceled) holds too.
func (e *Error) Unwrap() error { return e.cause }

// invalid is an argument the wrapper rejects before calling the library.
func invalid(format string, args ...any) error {
	return &Error{Status: StatusInvalidArgument, Message: "INLAY_ERR_INVALID_ARGUMENT: " + fmt.Sprintf(format, args...)}
}

// call runs one library call and turns a failure into an *Error. inlay_last_error is per
// OS thread, and a goroutine may move between threads between two cgo calls, so the
// goroutine stays on its thread from the call until the message is read.
func call(f func() C.inlay_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	st := f()
	if st == C.INLAY_OK {
		return nil
	}
	return &Error{Status: Status(st), Message: C.GoString(C.inlay_last_error())}
}
