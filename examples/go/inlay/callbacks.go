package inlay

// #include <inlay/inlay.h>
// void inlay_go_set_token_callback(inlay_generate_params* params, uintptr_t handle);
// void inlay_go_set_progress_callback(inlay_model_params* params, uintptr_t handle);
import "C"

import "runtime/cgo"

// tokenState is what one generate call's on_token callback needs. It reaches the C
// callback as a cgo.Handle, valid for the duration of that call only.
type tokenState struct {
	onToken   func(token int32, piece string) bool // the caller's, may be nil
	cancelled func() bool                          // the context is done
	session   *C.inlay_session
	panicked  any // a panic in onToken, re-raised once the library has returned
}

//export goOnToken
func goOnToken(token C.int32_t, piece *C.char, n C.size_t, user C.uintptr_t) C.bool {
	s := cgo.Handle(user).Value().(*tokenState)
	// A context cancelled before the library registered the call is caught here, so
	// the call still ends with INLAY_STOP_CANCELLED rather than running to the end.
	if s.cancelled != nil && s.cancelled() {
		C.inlay_session_cancel(s.session)
	}
	if s.onToken == nil {
		return true
	}
	// A panic must not unwind through the library's C++ frames: stop, and re-panic later.
	keepGoing := false
	func() {
		defer func() {
			if r := recover(); r != nil {
				s.panicked = r
			}
		}()
		keepGoing = s.onToken(int32(token), C.GoStringN(piece, C.int(n)))
	}()
	return C.bool(keepGoing)
}

// progressState carries a load's progress callback.
type progressState struct {
	onProgress func(progress float32) bool
	panicked   any
}

//export goOnProgress
func goOnProgress(progress C.float, user C.uintptr_t) C.bool {
	s := cgo.Handle(user).Value().(*progressState)
	keepGoing := false
	func() {
		defer func() {
			if r := recover(); r != nil {
				s.panicked = r
			}
		}()
		keepGoing = s.onProgress(float32(progress))
	}()
	return C.bool(keepGoing)
}

func setTokenCallback(p *C.inlay_generate_params, h cgo.Handle) {
	C.inlay_go_set_token_callback(p, C.uintptr_t(h))
}

func setProgressCallback(p *C.inlay_model_params, h cgo.Handle) {
	C.inlay_go_set_progress_callback(p, C.uintptr_t(h))
}

// rethrow re-raises, on the caller's goroutine, a panic a callback recovered from.
func rethrow(panicked any) {
	if panicked != nil {
		panic(panicked)
	}
}
