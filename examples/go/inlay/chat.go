package inlay

// #include <stdlib.h>
// #include <inlay/inlay.h>
import "C"

import (
	"context"
	"unsafe"
)

// Message is one turn of a conversation (inlay_chat_message).
type Message struct {
	Role    string // "system", "user", "assistant", ...
	Content string
}

// Thinking is inlay_thinking (Qwen3's enable_thinking).
type Thinking int

const (
	ThinkingDefault Thinking = C.INLAY_THINKING_DEFAULT
	ThinkingOff     Thinking = C.INLAY_THINKING_OFF
	ThinkingOn      Thinking = C.INLAY_THINKING_ON
)

// ChatOptions are inlay_chat_params; nil means the defaults: the model's own template,
// ending with the header of the assistant's turn.
type ChatOptions struct {
	Template           string // Jinja source used instead of the model's; "" = the model's
	Thinking           Thinking
	NoGenerationPrompt bool // leave out the assistant's header (add_generation_prompt = false)
}

// cChat is a conversation and chat params in C memory.
type cChat struct {
	messages *C.inlay_chat_message
	n        int
	params   *C.inlay_chat_params // in C memory, as cParams
	alloc    []unsafe.Pointer
}

func toCChat(messages []Message, opts *ChatOptions) (*cChat, error) {
	if opts == nil {
		opts = &ChatOptions{}
	}
	params := (*C.inlay_chat_params)(C.calloc(1, C.sizeof_inlay_chat_params))
	c := &cChat{n: len(messages), params: params, alloc: []unsafe.Pointer{unsafe.Pointer(params)}}
	fail := func(err error) (*cChat, error) { c.free(); return nil, err }
	C.inlay_chat_params_init_size(c.params, C.sizeof_inlay_chat_params)
	c.params.thinking = C.inlay_thinking(opts.Thinking)
	c.params.add_generation_prompt = C.bool(!opts.NoGenerationPrompt)
	if opts.Template != "" {
		t, err := cString("the chat template", opts.Template)
		if err != nil {
			return fail(err)
		}
		c.alloc = append(c.alloc, unsafe.Pointer(t))
		c.params.chat_template = t
	}
	if len(messages) > 0 {
		array := C.calloc(C.size_t(len(messages)), C.sizeof_inlay_chat_message)
		c.alloc = append(c.alloc, array)
		c.messages = (*C.inlay_chat_message)(array)
		slots := unsafe.Slice(c.messages, len(messages))
		for i, m := range messages {
			role, err := cString("a message role", m.Role)
			if err != nil {
				return fail(err)
			}
			c.alloc = append(c.alloc, unsafe.Pointer(role))
			content, err := cString("a message content", m.Content)
			if err != nil {
				return fail(err)
			}
			c.alloc = append(c.alloc, unsafe.Pointer(content))
			slots[i].role, slots[i].content = role, content
		}
	}
	return c, nil
}

func (c *cChat) free() {
	for _, a := range c.alloc {
		C.free(a)
	}
	c.alloc = nil
}

// ApplyTemplate renders the conversation with the chat template, as Chat would.
func (m *Model) ApplyTemplate(messages []Message, opts *ChatOptions) (string, error) {
	c, err := toCChat(messages, opts)
	if err != nil {
		return "", err
	}
	defer c.free()
	var text string
	err = m.use(func(ptr *C.inlay_model) error {
		var length C.size_t
		err := call(func() C.inlay_status {
			return C.inlay_chat_apply_template(ptr, c.messages, C.size_t(c.n), c.params, nil, 0, &length)
		})
		if err != nil && !errorsIsStatus(err, StatusBufferTooSmall) {
			return err
		}
		buf := C.malloc(length + 1)
		defer C.free(buf)
		err = call(func() C.inlay_status {
			return C.inlay_chat_apply_template(ptr, c.messages, C.size_t(c.n), c.params, (*C.char)(buf), length+1, &length)
		})
		if err == nil {
			text = C.GoStringN((*C.char)(buf), C.int(length))
		}
		return err
	})
	return text, err
}

// Chat renders the whole conversation with the chat template, processes what the
// session lacks of it (usually only the new messages) and generates the reply, as
// Generate does. Pass each reply back as an "assistant" message in the next call.
func (s *Session) Chat(ctx context.Context, messages []Message, chat *ChatOptions, opts *GenerateOptions,
	onToken func(token int32, piece string) bool) (*Result, error) {
	c, err := toCChat(messages, chat)
	if err != nil {
		return nil, err
	}
	defer c.free()
	return s.run(ctx, opts, onToken, func(ptr *C.inlay_session, p *C.inlay_generate_params, out **C.inlay_result) C.inlay_status {
		return C.inlay_session_chat(ptr, c.messages, C.size_t(c.n), c.params, p, out)
	})
}
