package inlay

// #cgo LDFLAGS: -linlay
// #include <stdlib.h>
// #include <inlay/inlay.h>
import "C"

import (
	"fmt"
	"runtime"
	"runtime/cgo"
	"strconv"
	"strings"
	"sync"
	"unsafe"
)

// Device is where a model runs (inlay_device).
type Device int

const (
	DeviceAuto Device = C.INLAY_DEVICE_AUTO // a usable GPU, else the CPU
	DeviceCPU  Device = C.INLAY_DEVICE_CPU
	DeviceCUDA Device = C.INLAY_DEVICE_CUDA // fails with StatusUnsupported where there is none
)

// ParseDevice reads "auto", "cpu", "cuda" or "cuda:N" into a device and its index.
func ParseDevice(s string) (Device, int, error) {
	switch {
	case s == "auto":
		return DeviceAuto, 0, nil
	case s == "cpu":
		return DeviceCPU, 0, nil
	case s == "cuda":
		return DeviceCUDA, 0, nil
	case strings.HasPrefix(s, "cuda:"):
		n, err := strconv.Atoi(s[len("cuda:"):])
		if err != nil || n < 0 {
			return 0, 0, invalid("device %q: the index after cuda: must be a number >= 0", s)
		}
		return DeviceCUDA, n, nil
	}
	return 0, 0, invalid("device %q is not auto, cpu, cuda or cuda:N", s)
}

// ModelOptions are inlay_model_params; the zero value means the library's defaults.
type ModelOptions struct {
	Threads       int // compute threads; 0 = every core
	ContextLength int // tokens per session; 0 = the model's own
	Device        Device
	DeviceIndex   int
	// Progress receives the load's progress in [0, 1] on the loading goroutine; returning
	// false aborts the load (StatusCancelled).
	Progress func(progress float32) bool
}

// Model is a loaded model (inlay_model), safe for use from many goroutines. Close it
// when done; the native model is released once Close was called and the last of its
// sessions is closed (inlay.h: a model must outlive its sessions). A finalizer releases
// a model that was never closed.
type Model struct {
	mu       sync.RWMutex // read-held during calls on ptr, write-held to change the fields
	ptr      *C.inlay_model
	closed   bool
	sessions int // open sessions, which keep ptr alive
}

func cString(what, s string) (*C.char, error) {
	if strings.IndexByte(s, 0) >= 0 {
		return nil, invalid("%s contains a NUL byte", what)
	}
	return C.CString(s), nil
}

// Load loads a GGUF file or a Hugging Face folder. opts may be nil.
func Load(path string, opts *ModelOptions) (*Model, error) {
	if opts == nil {
		opts = &ModelOptions{}
	}
	cpath, err := cString("the model path", path)
	if err != nil {
		return nil, err
	}
	defer C.free(unsafe.Pointer(cpath))
	var mp C.inlay_model_params
	C.inlay_model_params_init_size(&mp, C.sizeof_inlay_model_params)
	mp.n_threads = C.int32_t(opts.Threads)
	mp.context_length = C.int32_t(opts.ContextLength)
	mp.device = C.int32_t(opts.Device)
	mp.device_index = C.int32_t(opts.DeviceIndex)
	var progress *progressState
	if opts.Progress != nil {
		progress = &progressState{onProgress: opts.Progress}
		h := cgo.NewHandle(progress)
		defer h.Delete()
		setProgressCallback(&mp, h)
	}
	var ptr *C.inlay_model
	err = call(func() C.inlay_status { return C.inlay_model_load(cpath, &mp, &ptr) })
	if progress != nil {
		if ptr != nil && progress.panicked != nil {
			C.inlay_model_free(ptr)
		}
		rethrow(progress.panicked)
	}
	if err != nil {
		return nil, err
	}
	m := &Model{ptr: ptr}
	runtime.SetFinalizer(m, func(m *Model) { m.Close() })
	return m, nil
}

// Close marks the model closed; the native model is freed now if no session is open,
// else when the last one closes. Closing twice is harmless.
func (m *Model) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.releaseLocked()
	return nil
}

// releaseLocked frees the native model once it is closed and has no sessions left.
func (m *Model) releaseLocked() {
	if m.closed && m.sessions == 0 && m.ptr != nil {
		C.inlay_model_free(m.ptr)
		m.ptr = nil
		runtime.SetFinalizer(m, nil)
	}
}

// Released reports whether the native model has been freed.
func (m *Model) Released() bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.ptr == nil
}

// use runs f on the native model, which Close cannot free meanwhile.
func (m *Model) use(f func(ptr *C.inlay_model) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed || m.ptr == nil {
		return invalid("the model is closed")
	}
	return f(m.ptr)
}

// ModelInfo is inlay_model_info.
type ModelInfo struct {
	Architecture, Name, Device                            string
	Params, FileBytes                                     int64
	Vocab, Embd, Layers, Heads, KVHeads, HeadDim, FF      int
	ContextLength, TrainContextLength, BOSToken, EOSToken int
}

// Info describes the model.
func (m *Model) Info() (ModelInfo, error) {
	var info C.inlay_model_info
	info.struct_size = C.sizeof_inlay_model_info
	var out ModelInfo
	err := m.use(func(ptr *C.inlay_model) error {
		if err := call(func() C.inlay_status { return C.inlay_model_get_info(ptr, &info) }); err != nil {
			return err
		}
		// The strings are owned by the model: copy them while it is held.
		out = ModelInfo{
			Architecture: C.GoString(info.architecture), Name: C.GoString(info.name), Device: C.GoString(info.device),
			Params: int64(info.n_params), FileBytes: int64(info.file_bytes),
			Vocab: int(info.n_vocab), Embd: int(info.n_embd), Layers: int(info.n_layers), Heads: int(info.n_heads),
			KVHeads: int(info.n_kv_heads), HeadDim: int(info.head_dim), FF: int(info.n_ff),
			ContextLength: int(info.context_length), TrainContextLength: int(info.train_context_length),
			BOSToken: int(info.bos_token), EOSToken: int(info.eos_token),
		}
		return nil
	})
	return out, err
}

// OpenSessions is the number of native sessions of this model that exist now, as the
// library counts them (inlay_metrics.sessions).
func (m *Model) OpenSessions() (int, error) {
	var metrics C.inlay_metrics
	metrics.struct_size = C.sizeof_inlay_metrics
	err := m.use(func(ptr *C.inlay_model) error {
		return call(func() C.inlay_status { return C.inlay_model_get_metrics(ptr, &metrics) })
	})
	return int(metrics.sessions), err
}

// Tokenize turns text into token ids (addBOS: prepend BOS where the vocabulary asks for
// it; special-token text such as "<s>" becomes its id).
func (m *Model) Tokenize(text string, addBOS bool) ([]int32, error) {
	flags := C.uint32_t(C.INLAY_TOKENIZE_PARSE_SPECIAL)
	if addBOS {
		flags |= C.INLAY_TOKENIZE_ADD_BOS
	}
	ctext := C.CBytes([]byte(text)) // not NUL-terminated: the length is passed
	defer C.free(ctext)
	var out []int32
	err := m.use(func(ptr *C.inlay_model) error {
		var n C.size_t
		err := call(func() C.inlay_status {
			return C.inlay_tokenize(ptr, (*C.char)(ctext), C.size_t(len(text)), flags, nil, 0, &n)
		})
		if err != nil && !errorsIsStatus(err, StatusBufferTooSmall) {
			return err
		}
		out = make([]int32, int(n)+1) // +1: never an empty slice to take the address of
		err = call(func() C.inlay_status {
			return C.inlay_tokenize(ptr, (*C.char)(ctext), C.size_t(len(text)), flags,
				(*C.int32_t)(unsafe.Pointer(&out[0])), C.size_t(len(out)), &n)
		})
		out = out[:n]
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func errorsIsStatus(err error, s Status) bool {
	e, ok := err.(*Error)
	return ok && e.Status == s
}

// String names the model for messages.
func (m *Model) String() string {
	info, err := m.Info()
	if err != nil {
		return "inlay.Model(closed)"
	}
	return fmt.Sprintf("inlay.Model(%s %q on %s)", info.Architecture, info.Name, info.Device)
}
