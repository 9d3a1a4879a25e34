package inlay_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"inlay.example/go/inlay"
)

// modelPath is the default model of the repository (INLAY_MODEL overrides it).
func modelPath(t *testing.T) string {
	if p := os.Getenv("INLAY_MODEL"); p != "" {
		return p
	}
	p, err := filepath.Abs("../../../models/default")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func load(t *testing.T, opts *inlay.ModelOptions) *inlay.Model {
	t.Helper()
	m, err := inlay.Load(modelPath(t), opts)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

func newSession(t *testing.T, m *inlay.Model) *inlay.Session {
	t.Helper()
	s, err := m.NewSession(nil)
	if err != nil {
		t.Fatalf("session: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func greedy(n int) *inlay.GenerateOptions {
	o := inlay.DefaultGenerateOptions()
	o.MaxTokens = n
	o.Temperature = 0
	return &o
}

// status asserts that err is an *inlay.Error with the status want.
func status(t *testing.T, err error, want inlay.Status) *inlay.Error {
	t.Helper()
	var e *inlay.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v (%T), want an *inlay.Error with %v", err, err, want)
	}
	if e.Status != want || !errors.Is(err, want) {
		t.Fatalf("got status %v (%v), want %v", e.Status, err, want)
	}
	if e.Message == "" {
		t.Fatalf("%v has no message", want)
	}
	return e
}

func TestDefaultsComeFromTheLibrary(t *testing.T) {
	o := inlay.DefaultGenerateOptions()
	// inlay.h's documented defaults: a wrong struct layout would read other fields here.
	if o.MaxTokens != 256 || o.Temperature != 0.8 || o.TopK != 40 || o.TopP != 0.95 || o.MinP != 0.05 ||
		o.Seed != ^uint64(0) || !o.AddBOS || !o.ParseSpecial || o.IgnoreEOS {
		t.Fatalf("defaults %+v differ from inlay.h's", o)
	}
}

func TestMissingFileIsIO(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.gguf")
	m, err := inlay.Load(missing, nil)
	if m != nil {
		t.Fatal("a model came back from a missing file")
	}
	e := status(t, err, inlay.StatusIO)
	if !strings.Contains(e.Message, "absent.gguf") {
		t.Fatalf("the message %q does not name the file", e.Message)
	}
	if errors.Is(err, inlay.StatusBadFormat) {
		t.Fatal("an IO error matched StatusBadFormat")
	}
}

func TestBadArguments(t *testing.T) {
	if _, _, err := inlay.ParseDevice("gpu"); err == nil {
		t.Fatal("ParseDevice accepted gpu")
	} else {
		status(t, err, inlay.StatusInvalidArgument)
	}
	_, err := inlay.Load(modelPath(t), &inlay.ModelOptions{Device: inlay.Device(7)})
	status(t, err, inlay.StatusInvalidArgument) // rejected by the library
	_, err = inlay.Load("bad\x00path", nil)
	status(t, err, inlay.StatusInvalidArgument) // rejected by the wrapper

	m := load(t, nil)
	s := newSession(t, m)
	o := greedy(-1)
	_, err = s.Generate(context.Background(), "x", o, nil)
	status(t, err, inlay.StatusInvalidArgument)
	o = greedy(4)
	o.Stop = []string{""}
	_, err = s.Generate(context.Background(), "x", o, nil)
	status(t, err, inlay.StatusInvalidArgument)
	_, err = s.Generate(context.Background(), "a\x00b", greedy(4), nil)
	status(t, err, inlay.StatusInvalidArgument)
	_, err = s.Generate(context.Background(), "\xff\xfe", greedy(4), nil)
	status(t, err, inlay.StatusInvalidUTF8)
	if _, err = m.NewSession(&inlay.SessionOptions{ContextLength: -1}); err == nil {
		t.Fatal("a negative context length was accepted")
	}
	// A failed call leaves the session usable.
	if r, err := s.Generate(context.Background(), "You will", greedy(4), nil); err != nil || len(r.Tokens) == 0 {
		t.Fatalf("generate after failures: %v", err)
	}
}

func TestDevices(t *testing.T) {
	cpu := load(t, &inlay.ModelOptions{Device: inlay.DeviceCPU})
	if info, err := cpu.Info(); err != nil || info.Device != "cpu" {
		t.Fatalf("cpu model runs on %q (%v)", info.Device, err)
	}
	cuda, err := inlay.Load(modelPath(t), &inlay.ModelOptions{Device: inlay.DeviceCUDA})
	if err == nil {
		// A machine with a GPU and a CUDA build.
		defer cuda.Close()
		if info, err := cuda.Info(); err != nil || !strings.HasPrefix(info.Device, "cuda") {
			t.Fatalf("cuda model runs on %q (%v)", info.Device, err)
		}
		return
	}
	e := status(t, err, inlay.StatusUnsupported)
	if !strings.Contains(strings.ToLower(e.Message), "cuda") {
		t.Fatalf("the message %q does not say what is missing", e.Message)
	}
}

func TestProgress(t *testing.T) {
	var seen []float32
	load(t, &inlay.ModelOptions{Progress: func(p float32) bool { seen = append(seen, p); return true }})
	if len(seen) < 2 || seen[len(seen)-1] != 1 {
		t.Fatalf("progress %v does not end at 1", seen)
	}
	for i := 1; i < len(seen); i++ {
		if seen[i] < seen[i-1] {
			t.Fatalf("progress went back: %v", seen)
		}
	}
	m, err := inlay.Load(modelPath(t), &inlay.ModelOptions{Progress: func(float32) bool { return false }})
	if m != nil {
		t.Fatal("an aborted load returned a model")
	}
	status(t, err, inlay.StatusCancelled)
}

func TestTokenize(t *testing.T) {
	m := load(t, nil)
	info, _ := m.Info()
	with, err := m.Tokenize("You will", true)
	if err != nil || len(with) < 2 || int(with[0]) != info.BOSToken {
		t.Fatalf("'You will' with BOS: %v %v", with, err)
	}
	if without, err := m.Tokenize("You will", false); err != nil || !equal(without, with[1:]) {
		t.Fatalf("without BOS: %v %v", without, err)
	}
	if empty, err := m.Tokenize("", false); err != nil || len(empty) != 0 {
		t.Fatalf("the empty text: %v %v", empty, err)
	}
}

func TestStreamingEqualsNonStreaming(t *testing.T) {
	m := load(t, nil)
	plain, err := newSession(t, m).Generate(context.Background(), "You will", greedy(40), nil)
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var tokens []int32
	streamed, err := newSession(t, m).Generate(context.Background(), "You will", greedy(40), func(tok int32, piece string) bool {
		text.WriteString(piece)
		if tok >= 0 { // -1: the final flush of held-back text
			tokens = append(tokens, tok)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(plain.Tokens) == 0 || plain.Text == "" {
		t.Fatal("nothing was generated")
	}
	if streamed.Text != plain.Text || text.String() != plain.Text {
		t.Fatalf("streamed %q, result %q, non-streaming %q", text.String(), streamed.Text, plain.Text)
	}
	// The end-of-generation token ends the result's tokens but has no text to stream.
	want := plain.Tokens
	if plain.StopReason == inlay.StopEOG {
		want = want[:len(want)-1]
	}
	if !equal(tokens, want) || !equal(streamed.Tokens, plain.Tokens) {
		t.Fatalf("tokens differ: streamed %v, non-streaming %v", tokens, plain.Tokens)
	}
	if plain.StopReason != inlay.StopEOG && plain.StopReason != inlay.StopMaxTokens {
		t.Fatalf("stop reason %v", plain.StopReason)
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func long() *inlay.GenerateOptions {
	o := greedy(200)
	o.IgnoreEOS = true
	return o
}

func TestCancelFromAnotherGoroutine(t *testing.T) {
	s := newSession(t, load(t, nil))
	third, cancelled := make(chan struct{}), make(chan error)
	go func() { <-third; cancelled <- s.Cancel() }()
	n := 0
	r, err := s.Generate(context.Background(), "You will", long(), func(int32, string) bool {
		if n++; n == 3 {
			close(third)
			if err := <-cancelled; err != nil { // the cancel has returned before token 4
				t.Errorf("cancel: %v", err)
			}
		}
		return true
	})
	status(t, err, inlay.StatusCancelled)
	if errors.Is(err, context.Canceled) {
		t.Fatal("a Cancel matched context.Canceled")
	}
	if r == nil || r.StopReason != inlay.StopCancelled {
		t.Fatalf("result %+v", r)
	}
	if len(r.Tokens) < 3 || len(r.Tokens) > 4 { // at most one token after cancel returned
		t.Fatalf("%d tokens after a cancel at the third", len(r.Tokens))
	}
	// The session goes on: a cancel while idle is ignored.
	if err := s.Cancel(); err != nil {
		t.Fatal(err)
	}
	if r, err := s.Generate(context.Background(), " and", greedy(5), nil); err != nil || r.StopReason == inlay.StopCancelled {
		t.Fatalf("after cancel: %v %+v", err, r)
	}
}

func TestContextCancellation(t *testing.T) {
	s := newSession(t, load(t, nil))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	third := make(chan struct{})
	go func() { <-third; cancel() }()
	n := 0
	r, err := s.Generate(ctx, "You will", long(), func(int32, string) bool {
		if n++; n == 3 {
			close(third)
		}
		return true
	})
	status(t, err, inlay.StatusCancelled)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v does not match context.Canceled", err)
	}
	if r == nil || r.StopReason != inlay.StopCancelled || len(r.Tokens) < 3 || len(r.Tokens) >= 200 {
		t.Fatalf("result %+v", r)
	}

	// The watcher goroutine cancels the call itself, not only the check at the next token:
	// cancelled during the callback of the last token that max_tokens allows (so that no
	// later token's check could cancel it), the call still stops as cancelled.
	fired := make(chan struct{}, 1)
	inlay.SetWatcherHook(func() { fired <- struct{}{} })
	defer inlay.SetWatcherHook(nil)
	watched, cancelWatched := context.WithCancel(context.Background())
	defer cancelWatched()
	n = 0
	three := greedy(3)
	three.IgnoreEOS = true
	r, err = s.Generate(watched, " and", three, func(int32, string) bool {
		if n++; n == 3 {
			cancelWatched()
			select {
			case <-fired:
			case <-time.After(time.Minute): // a liveness bound only
				t.Error("the watcher did not cancel the call")
			}
		}
		return true
	})
	status(t, err, inlay.StatusCancelled)
	if r == nil || r.StopReason != inlay.StopCancelled || len(r.Tokens) != 3 {
		t.Fatalf("after the watcher's cancel at the last token: %+v", r)
	}
	inlay.SetWatcherHook(nil)

	// A context that is done before the call: the call stops at its first token.
	done, stop := context.WithCancel(context.Background())
	stop()
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	r, err = s.Generate(done, "You will", long(), nil)
	status(t, err, inlay.StatusCancelled)
	if r == nil || r.StopReason != inlay.StopCancelled || len(r.Tokens) > 2 {
		t.Fatalf("result %+v", r)
	}
}

func TestCallbackStopsAndPanics(t *testing.T) {
	s := newSession(t, load(t, nil))
	n := 0
	r, err := s.Generate(context.Background(), "You will", long(), func(int32, string) bool { n++; return n < 2 })
	if err != nil || r.StopReason != inlay.StopCallback || len(r.Tokens) != 2 {
		t.Fatalf("stop from the callback: %v %+v", err, r)
	}
	// A call inside a callback on the same session is BUSY, and Cancel works there.
	var inner error
	_, err = s.Generate(context.Background(), "", long(), func(int32, string) bool {
		_, inner = s.Generate(context.Background(), "x", greedy(1), nil)
		s.Cancel()
		return true
	})
	status(t, inner, inlay.StatusBusy)
	status(t, err, inlay.StatusCancelled)

	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want the callback's panic", r)
			}
		}()
		s.Generate(context.Background(), " and", long(), func(int32, string) bool { panic("boom") })
		t.Fatal("the panic was lost")
	}()
	if _, err := s.Generate(context.Background(), " then", greedy(3), nil); err != nil {
		t.Fatalf("the session after a panic: %v", err)
	}
}

const template = "{% for m in messages %}{% if m.role == 'user' %}Q: {% else %}A:{% endif %}" +
	"{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}A:{% endif %}"

// withTemplate is the default model's folder with a chat_template.jinja of its own.
func withTemplate(t *testing.T) string {
	dir := t.TempDir()
	entries, err := os.ReadDir(modelPath(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(modelPath(t), e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte(template), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestChatSecondTurnSeesTheFirst(t *testing.T) {
	plain := load(t, nil)
	own, err := plain.ApplyTemplate([]inlay.Message{{Role: "user", Content: "hi"}}, nil)
	if err != nil || own != "Q: hi\nA:" { // the default model's own (Q/A) template
		t.Fatalf("the default model's template gave %q, %v", own, err)
	}

	m, err := inlay.Load(withTemplate(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	reply := greedy(24)
	reply.Stop = []string{"\n"}
	s := newSession(t, m)
	conv := []inlay.Message{{Role: "user", Content: "What will happen to me?"}}
	first, err := s.Chat(context.Background(), conv, nil, reply, nil)
	if err != nil || first.Text == "" {
		t.Fatalf("turn 1: %v %+v", err, first)
	}
	after1, _ := s.NTokens()
	conv = append(conv, inlay.Message{Role: "assistant", Content: first.Text},
		inlay.Message{Role: "user", Content: "And after that?"})

	rendered, err := m.ApplyTemplate(conv, nil)
	if err != nil {
		t.Fatal(err)
	}
	explicit, err := m.ApplyTemplate(conv, &inlay.ChatOptions{Template: template})
	if err != nil || rendered != explicit {
		t.Fatalf("the model's template rendered %q, the same template given %q (%v)", rendered, explicit, err)
	}
	want := "Q: What will happen to me?\nA:" + first.Text + "\nQ: And after that?\nA:"
	if rendered != want {
		t.Fatalf("rendered %q, want %q", rendered, want)
	}

	second, err := s.Chat(context.Background(), conv, nil, reply, nil)
	if err != nil {
		t.Fatalf("turn 2: %v", err)
	}
	full, err := m.Tokenize(rendered, true)
	if err != nil {
		t.Fatal(err)
	}
	// The session kept turn 1: only the new part was processed.
	if len(second.PromptTokens) == 0 || len(second.PromptTokens) >= len(full) || len(second.PromptTokens) >= len(full)-after1+2 {
		t.Fatalf("turn 2 processed %d tokens of a %d-token conversation (%d after turn 1)",
			len(second.PromptTokens), len(full), after1)
	}
	// ... and replied as a fresh session given the whole conversation does.
	fresh, err := newSession(t, m).Chat(context.Background(), conv, nil, reply, nil)
	if err != nil || fresh.Text != second.Text || len(fresh.PromptTokens) != len(full) {
		t.Fatalf("fresh session: %v %q (%d prompt tokens) vs continued %q", err, fresh.Text, len(fresh.PromptTokens), second.Text)
	}
}

func TestCloseFreesHandles(t *testing.T) {
	m, err := inlay.Load(modelPath(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := m.NewSession(nil)
	b, _ := m.NewSession(nil)
	if n, _ := m.OpenSessions(); n != 2 {
		t.Fatalf("%d sessions open, want 2", n)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a.Close() // twice is harmless
	if n, _ := m.OpenSessions(); n != 1 {
		t.Fatalf("%d sessions open after Close, want 1", n)
	}
	_, err = a.Generate(context.Background(), "x", greedy(1), nil)
	status(t, err, inlay.StatusInvalidArgument)

	// The model outlives its sessions: Close frees it once the last one is closed.
	m.Close()
	if m.Released() {
		t.Fatal("the model was freed under an open session")
	}
	if _, err := m.Info(); err == nil {
		t.Fatal("Info on a closed model succeeded")
	}
	if r, err := b.Generate(context.Background(), "You will", greedy(3), nil); err != nil || len(r.Tokens) == 0 {
		t.Fatalf("the open session after model.Close: %v", err)
	}
	b.Close()
	if !m.Released() {
		t.Fatal("the model was not freed with its last session")
	}
}

func TestFinalizerFreesForgottenSessions(t *testing.T) {
	m := load(t, nil)
	func() {
		for i := 0; i < 3; i++ {
			if _, err := m.NewSession(nil); err != nil { // never closed
				t.Fatal(err)
			}
		}
	}()
	// Finalizers run on their own goroutine after a collection: wait for the count.
	for i := 0; i < 500; i++ {
		runtime.GC()
		if n, _ := m.OpenSessions(); n == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	n, _ := m.OpenSessions()
	t.Fatalf("%d forgotten sessions still open", n)
}
