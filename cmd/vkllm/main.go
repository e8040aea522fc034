// Command vkllm runs language models on a GPU through Vulkan, or on the
// CPU: one tool with subcommands, as ollama and llama.cpp ship one.
//
//	vkllm serve --model NAME=PATH …   the OpenAI-compatible HTTP server
//	vkllm run --model PATH --prompt TEXT   generate a completion of TEXT
//	vkllm run --model PATH            chat with the model (interactive)
//	vkllm pull [--dir DIR] NAME       fetch a model: hf://OWNER/REPO[:QUANT] or a known one
//	vkllm list                        the models in the Hugging Face cache
//	vkllm rm hf://OWNER/REPO[:QUANT]  remove a model from that cache
//	vkllm bench --model PATH          prefill and decode speed
//	vkllm inspect PATH                what a model folder or GGUF file holds
//	vkllm tokenize --model PATH       the token ids of stdin's text
//	vkllm help [COMMAND]              this list, or a command's flags
//
// Every PATH of a model or adapter (--model, --lora, --draft,
// --peer-model, inspect's PATH) may also be a Hub name,
// hf://OWNER/REPO[@REVISION][:QUANT|/FILE], pulled into the Hugging Face
// cache first. `vkllm COMMAND -h` prints a command's flags. Every command prints an
// error as one line, "error: …", on stderr and exits 1 (2 for bad flags
// or usage). While a model loads, serve and run draw a progress bar on
// stderr when stderr is a terminal.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	_ "github.com/vkllm/vkllm/kernels/cpu"    // registers "cpu" for --backend cpu|auto
	_ "github.com/vkllm/vkllm/kernels/cpuref" // registers "cpu-ref"
	_ "github.com/vkllm/vkllm/kernels/vulkan" // registers "vulkan" for --backend vulkan|auto

	"github.com/vkllm/vkllm/cmd/internal/benchcmd"
	"github.com/vkllm/vkllm/errcode"
)

// env is what a command runs with: its standard streams and the
// interrupts it may watch.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// signals starts delivering SIGINT and SIGTERM to the channel it
	// returns. Until a command calls it, Ctrl-C ends the process as usual.
	signals func() <-chan os.Signal
	// hangups, when set, starts delivering SIGHUP to the channel it
	// returns (serve reloads its API keys).
	hangups func() <-chan os.Signal
	// exit ends the process (os.Exit when nil): bench's last resort when
	// an interrupt does not end it within interruptGrace.
	exit func(code int)
}

// interruptGrace is how long bench has, once SIGINT or SIGTERM came, to
// end by itself (a sweep finishes the run in flight and writes what it
// finished) before the process exits without it: a GPU that does not
// finish a dispatch must not keep a lease's process alive.
const interruptGrace = 2 * time.Second

// exitAfterGrace ends the process with status 130 when ctx is cancelled
// and the returned stop is not called within interruptGrace after.
func (e env) exitAfterGrace(ctx context.Context) (stop func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		select {
		case <-done:
		case <-time.After(interruptGrace):
			fmt.Fprintf(e.stderr, "error: interrupted; still busy after %v, exiting without waiting for it\n", interruptGrace)
			if e.exit != nil {
				e.exit(130)
			} else {
				os.Exit(130)
			}
		}
	}()
	return func() { close(done) }
}

// interruptible is ctx cancelled by the first SIGINT or SIGTERM.
func (e env) interruptible(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	sig := e.signals()
	go func() {
		select {
		case <-sig:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

type command struct {
	name, args, summary string
	run                 func(ctx context.Context, e env, args []string) int
}

// commands are vkllm's subcommands, in the order help lists them.
var commands []command

func init() {
	commands = []command{
		{"serve", "--model NAME=PATH [flags]", "serve models over an OpenAI-compatible HTTP API", serve},
		{"run", "--model PATH [--prompt TEXT | --tokens IDS] [flags]", "generate from a prompt, or chat when no prompt is given", runModel},
		{"pull", "[--dir DIR] NAME", "fetch a model: NAME is hf://OWNER/REPO[@REVISION][:QUANT|/FILE] from the Hugging Face Hub, or a known one (" + knownNames() + ")", pull},
		{"list", "[--dir DIR]", "list the models in the Hugging Face cache", list},
		{"rm", "[--dir DIR] hf://OWNER/REPO[@REVISION][:QUANT|/FILE]", "remove a model from the Hugging Face cache", rm},
		{"bench", "--model PATH [flags]", "measure prefill and decode speed", func(ctx context.Context, e env, args []string) int {
			// SIGINT and SIGTERM cancel ctx for the whole command (once
			// caught they no longer end the process by themselves): a
			// sweep stops at the next candidate, and whatever has not
			// ended interruptGrace later is ended.
			ctx, cancel := e.interruptible(ctx)
			defer cancel()
			defer e.exitAfterGrace(ctx)()
			args, err := resolveFlags(ctx, e.stderr, args, benchPathFlags...)
			if err != nil {
				fmt.Fprintf(e.stderr, "error: %v [%s]\n", err, errcode.Of(err))
				return 1
			}
			return benchcmd.Run(ctx, args, e.stdout, e.stderr)
		}},
		{"inspect", "[--json] PATH", "print what a model folder or GGUF file holds and whether it loads", inspectCmd},
		{"tokenize", "--model PATH [--chat FILE] [flags] < TEXT", "print the token ids of stdin's text, or render a chat request", tokenize},
	}
}

func main() {
	var once sync.Once
	ch := make(chan os.Signal, 1)
	e := env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, signals: func() <-chan os.Signal {
		once.Do(func() { signal.Notify(ch, os.Interrupt, syscall.SIGTERM) })
		return ch
	}, hangups: func() <-chan os.Signal {
		hup := make(chan os.Signal, 1)
		signal.Notify(hup, syscall.SIGHUP)
		return hup
	}}
	os.Exit(vkllm(context.Background(), e, os.Args[1:]))
}

// vkllm runs the command line args (without the program name) and is its
// exit status.
func vkllm(ctx context.Context, e env, args []string) (code int) {
	defer func() {
		if r := recover(); r != nil { // never show a stack trace to a user
			fmt.Fprintf(e.stderr, "error: internal error: %v\n", r)
			code = 1
		}
	}()
	if len(args) == 0 {
		usage(e.stderr)
		return 2
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && args[0] == "help" {
			if c := lookup(args[1]); c != nil {
				return c.run(ctx, e, []string{"-h"})
			}
			fmt.Fprintf(e.stderr, "error: unknown command %q; vkllm help lists them\n", args[1])
			return 2
		}
		usage(e.stdout)
		return 0
	}
	c := lookup(args[0])
	if c == nil {
		fmt.Fprintf(e.stderr, "error: unknown command %q\n", args[0])
		usage(e.stderr)
		return 2
	}
	return c.run(ctx, e, args[1:])
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "vkllm runs language models on a GPU through Vulkan, or on the CPU.\n\nUsage:")
	for _, c := range commands {
		fmt.Fprintf(w, "  vkllm %-8s %s\n  %16s %s\n", c.name, c.args, "", c.summary)
	}
	fmt.Fprintln(w, "\n`vkllm help COMMAND` or `vkllm COMMAND -h` prints a command's flags.")
}
