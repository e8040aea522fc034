// Command chat is an interactive chat with a model through its chat
// template (ChatML when it has none).
//
//	go run ./examples/chat --model PATH [--system TEXT] [--temperature 0.7]
//	    [--top-p P] [--seed S] [--max-tokens N] [--backend auto|cpu|cpu-ref|vulkan]
//
// Type a message and press Enter; the answer streams as it is generated,
// and then a timing line goes to stderr (prompt and generated tokens, their
// rates, the time to the first token, the backend).
// Commands:
//
//	/reset        forget the conversation (the system prompt stays)
//	/system TEXT  set the system prompt (and forget the conversation)
//	/quit         leave (so does end of input, Ctrl-D)
//
// Ctrl-C while an answer streams stops that answer (it is dropped from the
// history, with the question); Ctrl-C at the prompt asks for a second one,
// which leaves.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"os/signal"
	"strings"
	"time"

	_ "github.com/vkllm/vkllm/kernels/vulkan" // registers "vulkan" for --backend vulkan|auto

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/internal/runinfo"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

func main() {
	intr := make(chan os.Signal, 1)
	signal.Notify(intr, os.Interrupt)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, intr))
}

// streamer is what the REPL needs of a model; *engine.LLM is one.
type streamer interface {
	StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error]
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer, intr <-chan os.Signal) int {
	var (
		model, system string
		seed          int64
		ignoreEOS     bool
		p             sampler.Params
	)
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&model, "model", "", "model folder or .gguf file")
	backend := runinfo.BackendFlag(fs)
	fs.StringVar(&system, "system", "", "system prompt")
	fs.Float64Var(&p.Temperature, "temperature", 0.7, "sampling temperature in [0, 2]; 0 is greedy")
	fs.Float64Var(&p.TopP, "top-p", 0.9, "nucleus sampling mass, (0, 1]")
	fs.Int64Var(&seed, "seed", -1, "sampling seed (-1: random)")
	fs.IntVar(&p.MaxTokens, "max-tokens", 1024, "most tokens per answer")
	fs.BoolVar(&ignoreEOS, "ignore-eos", false, "do not stop at an end-of-sequence token (for testing)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	fail := func(err error) int {
		fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	if model == "" {
		return fail(errors.New("--model is required"))
	}
	if err := runinfo.CheckBackend(*backend); err != nil {
		return fail(err)
	}
	if seed >= 0 {
		s := uint64(seed)
		p.Seed = &s
	}
	p.IgnoreEOS = ignoreEOS
	if err := p.Validate(1 << 30); err != nil {
		return fail(err)
	}
	loadStart := time.Now()
	l, err := engine.Open(context.Background(), model, engine.Options{MaxSeqs: 1, Backend: *backend})
	if err != nil {
		return fail(err)
	}
	defer l.Close()
	fmt.Fprintln(stderr, runinfo.Loaded(l.Model(), time.Since(loadStart)))
	r := &repl{m: l, params: p, system: system, out: stdout, intr: intr,
		stats: stderr, backend: l.Model().Backend().Name()}
	return r.loop(stdin)
}

// repl is the conversation and its loop.
type repl struct {
	m       streamer
	params  sampler.Params
	system  string
	history []chat.Message // user and assistant turns
	out     io.Writer
	intr    <-chan os.Signal
	stats   io.Writer // gets each answer's timing line; nil: none
	backend string    // named in the timing line
}

func (r *repl) messages() []chat.Message {
	var msgs []chat.Message
	if r.system != "" {
		msgs = append(msgs, chat.Message{Role: "system", Content: r.system})
	}
	return append(msgs, r.history...)
}

// loop reads lines until /quit, end of input or a second Ctrl-C at the
// prompt.
func (r *repl) loop(stdin io.Reader) int {
	lines := make(chan string)
	go func() { // ends with stdin; a program's stdin ends with it
		defer close(lines)
		sc := bufio.NewScanner(stdin)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	fmt.Fprintln(r.out, "Type a message; /reset, /system TEXT, /quit. Ctrl-C stops an answer.")
	interrupted := false
	for {
		fmt.Fprint(r.out, "> ")
		var line string
		var ok bool
		select {
		case line, ok = <-lines:
			if !ok {
				fmt.Fprintln(r.out)
				return 0
			}
		case <-r.intr:
			if interrupted {
				fmt.Fprintln(r.out)
				return 0
			}
			interrupted = true
			fmt.Fprintln(r.out, "\n(press Ctrl-C again or Ctrl-D to quit)")
			continue
		}
		interrupted = false
		line = strings.TrimSpace(line)
		switch {
		case line == "":
		case line == "/quit" || line == "/exit":
			return 0
		case line == "/reset":
			r.history = nil
			fmt.Fprintln(r.out, "(conversation reset)")
		case line == "/system" || strings.HasPrefix(line, "/system "):
			r.system = strings.TrimSpace(strings.TrimPrefix(line, "/system"))
			r.history = nil
			fmt.Fprintf(r.out, "(system prompt set to %q; conversation reset)\n", r.system)
		case strings.HasPrefix(line, "/"):
			fmt.Fprintf(r.out, "(unknown command %s; try /reset, /system TEXT, /quit)\n", strings.Fields(line)[0])
		default:
			r.answer(line)
		}
	}
}

// answer streams the reply to one user message; Ctrl-C cancels it.
func (r *repl) answer(text string) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan struct{})
	watchDone := make(chan struct{})
	go func() {
		defer close(watchDone)
		select {
		case <-r.intr:
			cancel()
		case <-stopped:
		}
	}()
	defer func() { close(stopped); <-watchDone }()

	msgs := append(r.messages(), chat.Message{Role: "user", Content: text})
	var reply strings.Builder
	timing := runinfo.Start()
	for d, err := range r.m.StreamChat(ctx, engine.ChatRequest{Messages: msgs}, r.params) {
		if err != nil {
			if ctx.Err() != nil {
				fmt.Fprintln(r.out, "\n(answer stopped)")
			} else if errors.Is(err, engine.ErrPromptTooLong) {
				fmt.Fprintf(r.out, "(the conversation no longer fits the context: %v; /reset)\n", err)
			} else {
				fmt.Fprintf(r.out, "\n(error: %v)\n", err)
			}
			return // the question and the partial answer are dropped
		}
		io.WriteString(r.out, d.TextDelta)
		reply.WriteString(d.TextDelta)
		timing.Tokens(len(d.NewTokens))
		if d.Finished {
			timing.Done(d.Usage.PromptTokens, d.Usage.CachedTokens)
		}
	}
	fmt.Fprintln(r.out)
	if r.stats != nil {
		fmt.Fprintln(r.stats, timing.Line(r.backend))
	}
	r.history = append(r.history, chat.Message{Role: "user", Content: text}, chat.Message{Role: "assistant", Content: reply.String()})
}
