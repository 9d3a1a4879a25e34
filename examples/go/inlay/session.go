package inlay

// #include <stdlib.h>
// #include <inlay/inlay.h>
import "C"

import (
	"context"
	"runtime"
	"runtime/cgo"
	"sync"
	"unsafe"
)

// SessionOptions are inlay_session_params; nil or the zero value means the defaults.
type SessionOptions struct {
	ContextLength int // 0 = the model's context length
}

// Session is one conversation (inlay_session). Its calls run one at a time (a second
// call while one runs fails with StatusBusy); Cancel may be called from any goroutine,
// also from inside an onToken callback. Close frees it; a finalizer frees a session that
// was never closed.
type Session struct {
	mu      sync.Mutex
	ptr     *C.inlay_session
	users   int           // calls (and Cancels) in progress on ptr
	closing bool          // Close waits for users; new calls fail at once rather than wait
	drained chan struct{} // closed when users drops to 0 while Close waits
	model   *Model
	// No field points back into the Session: the finalizer of an object in a cycle may never run.
}

// NewSession opens a session on the model. opts may be nil.
func (m *Model) NewSession(opts *SessionOptions) (*Session, error) {
	if opts == nil {
		opts = &SessionOptions{}
	}
	var sp C.inlay_session_params
	C.inlay_session_params_init_size(&sp, C.sizeof_inlay_session_params)
	sp.context_length = C.int32_t(opts.ContextLength)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || m.ptr == nil {
		return nil, invalid("the model is closed")
	}
	var ptr *C.inlay_session
	if err := call(func() C.inlay_status { return C.inlay_session_create(m.ptr, &sp, &ptr) }); err != nil {
		return nil, err
	}
	m.sessions++
	s := &Session{ptr: ptr, model: m}
	runtime.SetFinalizer(s, func(s *Session) { s.Close() })
	return s, nil
}

// Close frees the native session, after the calls in progress on it have returned,
// and, if the model was closed and this was its last session, the model. Closing twice
// is harmless. Not from inside a callback of this session (it would wait for itself).
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr == nil || s.closing {
		return nil
	}
	s.closing = true
	if s.users > 0 {
		s.drained = make(chan struct{})
		s.mu.Unlock()
		<-s.drained
		s.mu.Lock()
	}
	C.inlay_session_free(s.ptr)
	s.ptr = nil
	runtime.SetFinalizer(s, nil)
	s.model.mu.Lock()
	s.model.sessions--
	s.model.releaseLocked()
	s.model.mu.Unlock()
	return nil
}

// use runs f on the native session, which Close cannot free meanwhile. It never waits
// for a lock that a call in progress holds, so it is safe inside callbacks.
func (s *Session) use(f func(ptr *C.inlay_session) error) error {
	s.mu.Lock()
	if s.ptr == nil || s.closing {
		s.mu.Unlock()
		return invalid("the session is closed")
	}
	ptr := s.ptr
	s.users++
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.users--; s.users == 0 && s.drained != nil {
			close(s.drained)
		}
		s.mu.Unlock()
	}()
	return f(ptr)
}

// Cancel asks a call running on this session to stop (StatusCancelled, stop reason
// StopCancelled, after at most one more token). Safe from any goroutine; a cancel while
// no call runs is ignored.
func (s *Session) Cancel() error {
	return s.use(func(ptr *C.inlay_session) error {
		return call(func() C.inlay_status { return C.inlay_session_cancel(ptr) })
	})
}

// Reset forgets the conversation.
func (s *Session) Reset() error {
	return s.use(func(ptr *C.inlay_session) error {
		return call(func() C.inlay_status { return C.inlay_session_reset(ptr) })
	})
}

// NTokens is the length of the conversation in tokens.
func (s *Session) NTokens() (int, error) {
	var n C.size_t
	err := s.use(func(ptr *C.inlay_session) error {
		return call(func() C.inlay_status { return C.inlay_session_n_tokens(ptr, &n) })
	})
	return int(n), err
}

// StopReason is inlay_stop_reason.
type StopReason int

const (
	StopNone        StopReason = C.INLAY_STOP_NONE
	StopEOG         StopReason = C.INLAY_STOP_EOG
	StopMaxTokens   StopReason = C.INLAY_STOP_MAX_TOKENS
	StopString      StopReason = C.INLAY_STOP_STRING
	StopCallback    StopReason = C.INLAY_STOP_CALLBACK
	StopCancelled   StopReason = C.INLAY_STOP_CANCELLED
	StopContextFull StopReason = C.INLAY_STOP_CONTEXT_FULL
)

func (r StopReason) String() string {
	names := [...]string{"none", "eog", "max_tokens", "stop_string", "callback", "cancelled", "context_full"}
	if int(r) >= 0 && int(r) < len(names) {
		return names[r]
	}
	return "unknown"
}

// GenerateOptions are inlay_generate_params. Start from DefaultGenerateOptions (the
// library's defaults); a nil *GenerateOptions means those defaults.
type GenerateOptions struct {
	MaxTokens                                        int
	Temperature                                      float32 // <= 0: greedy
	TopK                                             int
	TopP, MinP                                       float32
	RepeatPenalty, FrequencyPenalty, PresencePenalty float32
	PenaltyLastN                                     int
	Seed                                             uint64 // ^uint64(0): random
	IgnoreEOS                                        bool
	Stop                                             []string
	AddBOS, ParseSpecial                             bool
}

// DefaultGenerateOptions are the library's defaults, read from inlay_generate_params_init.
func DefaultGenerateOptions() GenerateOptions {
	var p C.inlay_generate_params
	C.inlay_generate_params_init_size(&p, C.sizeof_inlay_generate_params)
	return GenerateOptions{
		MaxTokens: int(p.max_tokens), Temperature: float32(p.temperature), TopK: int(p.top_k),
		TopP: float32(p.top_p), MinP: float32(p.min_p), RepeatPenalty: float32(p.repeat_penalty),
		FrequencyPenalty: float32(p.frequency_penalty), PresencePenalty: float32(p.presence_penalty),
		PenaltyLastN: int(p.penalty_last_n), Seed: uint64(p.seed), IgnoreEOS: bool(p.ignore_eos),
		AddBOS: bool(p.add_bos), ParseSpecial: bool(p.parse_special),
	}
}

// cParams is a filled inlay_generate_params with its C allocations (the stop strings).
// The struct itself is in C memory too: cgo rejects a pointer into a Go allocation that
// also holds Go pointers (the alloc slice).
type cParams struct {
	p     *C.inlay_generate_params
	alloc []unsafe.Pointer
}

func (o *GenerateOptions) toC() (*cParams, error) {
	if o == nil {
		d := DefaultGenerateOptions()
		o = &d
	}
	p := (*C.inlay_generate_params)(C.calloc(1, C.sizeof_inlay_generate_params))
	c := &cParams{p: p, alloc: []unsafe.Pointer{unsafe.Pointer(p)}}
	C.inlay_generate_params_init_size(p, C.sizeof_inlay_generate_params)
	p.max_tokens = C.int32_t(o.MaxTokens)
	p.temperature = C.float(o.Temperature)
	p.top_k = C.int32_t(o.TopK)
	p.top_p = C.float(o.TopP)
	p.min_p = C.float(o.MinP)
	p.repeat_penalty = C.float(o.RepeatPenalty)
	p.frequency_penalty = C.float(o.FrequencyPenalty)
	p.presence_penalty = C.float(o.PresencePenalty)
	p.penalty_last_n = C.int32_t(o.PenaltyLastN)
	p.seed = C.uint64_t(o.Seed)
	p.ignore_eos = C.bool(o.IgnoreEOS)
	p.add_bos = C.bool(o.AddBOS)
	p.parse_special = C.bool(o.ParseSpecial)
	if len(o.Stop) > 0 {
		// The array lives in C memory: a C struct must not point into Go memory that holds pointers.
		array := C.malloc(C.size_t(len(o.Stop)) * C.size_t(unsafe.Sizeof((*C.char)(nil))))
		c.alloc = append(c.alloc, array)
		strs := unsafe.Slice((**C.char)(array), len(o.Stop))
		for i, stop := range o.Stop {
			cs, err := cString("a stop string", stop)
			if err != nil {
				c.free()
				return nil, err
			}
			c.alloc = append(c.alloc, unsafe.Pointer(cs))
			strs[i] = cs
		}
		p.stop = (**C.char)(array)
		p.n_stop = C.size_t(len(o.Stop))
	}
	return c, nil
}

func (c *cParams) free() {
	for _, a := range c.alloc {
		C.free(a)
	}
	c.alloc = nil
}

// Timings are inlay_timings.
type Timings struct {
	PromptTokens, GeneratedTokens, PromptTokensReused int64
	PrefillSeconds, DecodeSeconds                     float64
	PrefillTokensPerSecond, DecodeTokensPerSecond     float64
}

// Result is what a generate or chat call produced.
type Result struct {
	Text         string
	Tokens       []int32 // generated
	PromptTokens []int32 // processed by this call
	StopReason   StopReason
	Timings      Timings
}

func copyTokens(p *C.int32_t, n C.size_t) []int32 {
	out := make([]int32, int(n))
	if n > 0 {
		copy(out, unsafe.Slice((*int32)(unsafe.Pointer(p)), int(n)))
	}
	return out
}

// takeResult copies an inlay_result into Go memory and frees it.
func takeResult(r *C.inlay_result) *Result {
	defer C.inlay_result_free(r)
	var n, np C.size_t
	tokens := C.inlay_result_tokens(r, &n)
	prompt := C.inlay_result_prompt_tokens(r, &np)
	var t C.inlay_timings
	t.struct_size = C.sizeof_inlay_timings
	C.inlay_result_timings(r, &t)
	return &Result{
		Text: C.GoString(C.inlay_result_text(r)), Tokens: copyTokens(tokens, n), PromptTokens: copyTokens(prompt, np),
		StopReason: StopReason(C.inlay_result_stop_reason(r)),
		Timings: Timings{
			PromptTokens: int64(t.prompt_tokens), GeneratedTokens: int64(t.generated_tokens),
			PromptTokensReused: int64(t.prompt_tokens_reused), PrefillSeconds: float64(t.prefill_s),
			DecodeSeconds: float64(t.decode_s), PrefillTokensPerSecond: float64(t.prefill_tokens_per_s),
			DecodeTokensPerSecond: float64(t.decode_tokens_per_s),
		},
	}
}

// watcherCancelled, when set (by the tests, export_test.go), runs after the context
// watcher of a call has called inlay_session_cancel.
var watcherCancelled func()

// run performs one generating call: the token callback (if any) is bridged through a
// cgo.Handle, and a goroutine turns ctx's cancellation into inlay_session_cancel.
func (s *Session) run(ctx context.Context, opts *GenerateOptions, onToken func(token int32, piece string) bool,
	invoke func(ptr *C.inlay_session, p *C.inlay_generate_params, out **C.inlay_result) C.inlay_status) (*Result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	params, err := opts.toC()
	if err != nil {
		return nil, err
	}
	defer params.free()
	var result *Result
	err = s.use(func(ptr *C.inlay_session) error {
		state := &tokenState{onToken: onToken, session: ptr}
		if ctx.Done() != nil {
			state.cancelled = func() bool { return ctx.Err() != nil }
		}
		if state.onToken != nil || state.cancelled != nil {
			h := cgo.NewHandle(state)
			defer h.Delete()
			setTokenCallback(params.p, h)
		}
		// The watcher ends before this returns, so it never cancels a later call or a freed session.
		stop, watched := make(chan struct{}), make(chan struct{})
		if done := ctx.Done(); done != nil {
			go func() {
				defer close(watched)
				select {
				case <-done:
					C.inlay_session_cancel(ptr)
					if watcherCancelled != nil {
						watcherCancelled()
					}
				case <-stop:
				}
			}()
		} else {
			close(watched)
		}
		var out *C.inlay_result
		err := call(func() C.inlay_status { return invoke(ptr, params.p, &out) })
		close(stop)
		<-watched
		if out != nil {
			result = takeResult(out)
		}
		rethrow(state.panicked)
		if e, ok := err.(*Error); ok && e.Status == StatusCancelled && ctx.Err() != nil {
			e.cause = ctx.Err()
		}
		return err
	})
	return result, err
}

// Generate appends prompt to the conversation and generates. onToken (may be nil)
// receives each token and the text it completes, on this goroutine; returning false
// stops (StopCallback). When ctx is cancelled the call stops with StopCancelled and an
// error with StatusCancelled that also matches ctx.Err(); the Result holds what was
// produced until then (it is non-nil also for that error).
func (s *Session) Generate(ctx context.Context, prompt string, opts *GenerateOptions,
	onToken func(token int32, piece string) bool) (*Result, error) {
	cprompt, err := cString("the prompt", prompt)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cprompt))
	return s.run(ctx, opts, onToken, func(ptr *C.inlay_session, p *C.inlay_generate_params, out **C.inlay_result) C.inlay_status {
		return C.inlay_session_generate(ptr, cprompt, p, out)
	})
}
