// inlay-demo: the Go binding (package inlay) in one program.
//
//	go run ./cmd/inlay-demo [-device auto|cpu|cuda|cuda:N] [-prompt TEXT] [-n N] MODEL
//
// It loads MODEL with a progress bar on the chosen device, streams a greedy
// continuation of the prompt, cancels a second generation from another goroutine
// through a context, holds a two-turn chat through the model's chat template, and shows
// how failures arrive: a missing file (StatusIO) and a device this build or machine
// lacks (StatusUnsupported, after which it continues on the CPU).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"inlay.example/go/inlay"
)

// FallbackTemplate is used for chat when the model has no template of its own (the
// default model in models/ is a plain text model): "Q: ...", "A: ..." lines, the form
// of the question-and-answer fortunes it was trained on.
const FallbackTemplate = "{% for m in messages %}{% if m.role == 'user' %}Q: {% else %}A:{% endif %}" +
	"{{ m.content }}\n{% endfor %}{% if add_generation_prompt %}A:{% endif %}"

func main() {
	device := flag.String("device", "auto", "auto, cpu, cuda or cuda:N")
	prompt := flag.String("prompt", "You will", "the prompt to continue")
	n := flag.Int("n", 32, "tokens to generate")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: inlay-demo [flags] MODEL\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *device, *prompt, *n); err != nil {
		fmt.Fprintf(os.Stderr, "inlay-demo: %v\n", err)
		os.Exit(1)
	}
}

// progressBar draws the load's progress on stderr.
func progressBar(p float32) bool {
	const width = 30
	filled := int(p * width)
	fmt.Fprintf(os.Stderr, "\rloading [%s%s] %3.0f%%", strings.Repeat("#", filled), strings.Repeat(".", width-filled), p*100)
	if p >= 1 {
		fmt.Fprintln(os.Stderr)
	}
	return true
}

func load(path, device string) (*inlay.Model, error) {
	dev, index, err := inlay.ParseDevice(device)
	if err != nil {
		return nil, err
	}
	model, err := inlay.Load(path, &inlay.ModelOptions{Device: dev, DeviceIndex: index, Progress: progressBar})
	if errors.Is(err, inlay.StatusUnsupported) && dev == inlay.DeviceCUDA {
		fmt.Fprintf(os.Stderr, "\ndevice %s is not available here (%v); using the CPU instead\n", device, err)
		return inlay.Load(path, &inlay.ModelOptions{Device: inlay.DeviceCPU, Progress: progressBar})
	}
	return model, err
}

func run(path, device, prompt string, n int) error {
	fmt.Println("== error handling: a file that does not exist")
	if _, err := inlay.Load("no-such-model.gguf", nil); errors.Is(err, inlay.StatusIO) {
		fmt.Printf("load failed as expected: %v\n", err)
	} else {
		return fmt.Errorf("loading a missing file gave %v, not %v", err, inlay.StatusIO)
	}

	fmt.Printf("\n== loading %s (device %s)\n", path, device)
	model, err := load(path, device)
	if err != nil {
		return err
	}
	defer model.Close()
	info, err := model.Info()
	if err != nil {
		return err
	}
	fmt.Printf("%s model, %d parameters, %d layers, context %d, running on %s\n",
		info.Architecture, info.Params, info.Layers, info.ContextLength, info.Device)

	session, err := model.NewSession(nil)
	if err != nil {
		return err
	}
	defer session.Close()

	fmt.Println("\n== streaming (greedy)")
	opts := inlay.DefaultGenerateOptions()
	opts.MaxTokens = n
	opts.Temperature = 0
	fmt.Print(prompt)
	result, err := session.Generate(context.Background(), prompt, &opts, func(_ int32, piece string) bool {
		fmt.Print(piece)
		return true
	})
	if err != nil {
		return err
	}
	fmt.Printf("\n[%d tokens, stop: %v, %.0f tokens/s]\n", len(result.Tokens), result.StopReason,
		result.Timings.DecodeTokensPerSecond)

	fmt.Println("\n== cancel from another goroutine (a context cancelled after 5 tokens)")
	if err := session.Reset(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fifth := make(chan struct{})
	go func() { <-fifth; cancel() }()
	long := inlay.DefaultGenerateOptions()
	long.MaxTokens = 200
	long.IgnoreEOS = true
	count := 0
	result, err = session.Generate(ctx, prompt, &long, func(_ int32, piece string) bool {
		fmt.Print(piece)
		if count++; count == 5 {
			close(fifth)
		}
		return true
	})
	if !errors.Is(err, inlay.StatusCancelled) || !errors.Is(err, context.Canceled) {
		return fmt.Errorf("the cancelled generation returned %v", err)
	}
	fmt.Printf("\n[stopped after %d of %d tokens, stop: %v, error: %v]\n", len(result.Tokens), long.MaxTokens,
		result.StopReason, err)

	fmt.Println("\n== chat, two turns through the model's chat template")
	if err := session.Reset(); err != nil {
		return err
	}
	chat := &inlay.ChatOptions{}
	if _, err := model.ApplyTemplate([]inlay.Message{{Role: "user", Content: "hi"}}, nil); errors.Is(err, inlay.StatusMissing) {
		fmt.Printf("(the model has no chat template: %v; using a Q:/A: template)\n", err)
		chat.Template = FallbackTemplate
	} else if err != nil {
		return err
	}
	reply := inlay.DefaultGenerateOptions()
	reply.MaxTokens = 40
	reply.Temperature = 0
	reply.Stop = []string{"\n"}
	var conversation []inlay.Message
	for _, question := range []string{"What will happen to me?", "And after that?"} {
		conversation = append(conversation, inlay.Message{Role: "user", Content: question})
		fmt.Printf("user: %s\nassistant:", question)
		result, err := session.Chat(context.Background(), conversation, chat, &reply, func(_ int32, piece string) bool {
			fmt.Print(piece)
			return true
		})
		if err != nil {
			return err
		}
		total, _ := session.NTokens()
		fmt.Printf("\n[processed %d new prompt tokens; the conversation is %d tokens]\n", len(result.PromptTokens), total)
		conversation = append(conversation, inlay.Message{Role: "assistant", Content: result.Text})
	}
	return nil
}
