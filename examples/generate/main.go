// Command generate runs one prompt through the engine and streams the text
// to stdout as it is generated.
//
//	go run ./examples/generate --model PATH (--prompt TEXT | --tokens 1,2,3)
//	    [--max-tokens N] [--temperature T] [--top-p P] [--top-k K] [--min-p P]
//	    [--seed S] [--repetition-penalty R] [--presence-penalty P]
//	    [--frequency-penalty F] [--stop TEXT]... [--ignore-eos]
//	    [--top-logprobs K] [--json] [--backend auto|cpu|cpu-ref|vulkan]
//
// The default is greedy decoding (temperature 0). While the model loads, a
// spinner runs on stderr when stderr is a terminal; then stderr gets what
// was loaded, and after the text a timing line (also with --json):
//
//	loaded SmolLM2-135M-Instruct (llama, Q4_1, 135M params, 94 MiB) on cpu in 0.21 s
//	prompt 6 tokens (312.5 tok/s), generated 32 tokens (61.0 tok/s), first token after 0.019 s, on cpu
//
// --json prints one object on stdout at the end instead of streaming:
//
//	{"prompt_tokens":[…],"tokens":[…],"text":"…","top_logprobs":[[{"id":N,"logprob":F},…],…],"finish_reason":"length"}
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	_ "github.com/vkllm/vkllm/kernels/vulkan" // registers "vulkan" for --backend vulkan|auto

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/internal/runinfo"
	"github.com/vkllm/vkllm/sampler"
)

// Result is what --json prints.
type Result struct {
	PromptTokens []int32             `json:"prompt_tokens"`
	Tokens       []int32             `json:"tokens"`
	Text         string              `json:"text"`
	TopLogprobs  [][]sampler.Logprob `json:"top_logprobs"`
	FinishReason string              `json:"finish_reason"`
}

type config struct {
	model, prompt, tokens  string
	backend                *string
	maxTokens, topLogprobs int
	seed                   int64
	json, ignoreEOS        bool
	params                 sampler.Params
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "error: internal error: %v\n", r)
			code = 1
		}
	}()
	var c config
	p := &c.params
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.model, "model", "", "model folder or .gguf file")
	fs.StringVar(&c.prompt, "prompt", "", "prompt text")
	fs.StringVar(&c.tokens, "tokens", "", "prompt as comma-separated token ids")
	c.backend = runinfo.BackendFlag(fs)
	fs.IntVar(&c.maxTokens, "max-tokens", 32, "tokens to generate")
	fs.Float64Var(&p.Temperature, "temperature", 0, "sampling temperature in [0, 2]; 0 is greedy")
	fs.Float64Var(&p.TopP, "top-p", 1, "nucleus sampling: keep the most likely tokens up to this mass, (0, 1]")
	fs.IntVar(&p.TopK, "top-k", 0, "keep the K most likely tokens (0: off)")
	fs.Float64Var(&p.MinP, "min-p", 0, "drop tokens less likely than min-p × the most likely one, [0, 1]")
	fs.Int64Var(&c.seed, "seed", -1, "sampling seed (-1: random)")
	fs.Float64Var(&p.RepetitionPenalty, "repetition-penalty", 1, "penalty on tokens of the prompt and output, (0, 2]")
	fs.Float64Var(&p.PresencePenalty, "presence-penalty", 0, "penalty on tokens already generated, [-2, 2]")
	fs.Float64Var(&p.FrequencyPenalty, "frequency-penalty", 0, "penalty by how often a token was generated, [-2, 2]")
	fs.Func("stop", "stop at this text (repeatable; not printed)", func(s string) error {
		p.Stop = append(p.Stop, s)
		return nil
	})
	fs.IntVar(&c.topLogprobs, "top-logprobs", 0, "report the K most likely tokens per step (0-20, with --json)")
	fs.BoolVar(&c.json, "json", false, "print one JSON object at the end")
	fs.BoolVar(&c.ignoreEOS, "ignore-eos", false, "do not stop at an end-of-sequence token")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if err := generate(ctx, c, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	return 0
}

func generate(ctx context.Context, c config, stdout, stderr io.Writer) error {
	switch {
	case c.model == "":
		return errors.New("--model is required")
	case (c.prompt == "") == (c.tokens == ""):
		return errors.New("give exactly one of --prompt and --tokens")
	case c.maxTokens < 1:
		return fmt.Errorf("--max-tokens must be ≥ 1, got %d", c.maxTokens)
	case c.topLogprobs < 0 || c.topLogprobs > 20:
		return fmt.Errorf("--top-logprobs must be in [0, 20], got %d", c.topLogprobs)
	}
	if err := runinfo.CheckBackend(*c.backend); err != nil {
		return err
	}
	p := c.params
	p.MaxTokens, p.IgnoreEOS, p.Logprobs = c.maxTokens, c.ignoreEOS, c.topLogprobs
	if c.seed >= 0 {
		s := uint64(c.seed)
		p.Seed = &s
	}
	if err := p.Validate(1 << 30); err != nil { // before a load that can take a while
		return err
	}
	var prompt []int32
	if c.tokens != "" {
		var err error
		if prompt, err = parseIDs(c.tokens); err != nil {
			return err
		}
	}

	done := spin(stderr, "loading "+c.model)
	loadStart := time.Now()
	l, err := engine.Open(ctx, c.model, engine.Options{MaxSeqs: 1, Backend: *c.backend})
	done()
	if err != nil {
		return err
	}
	defer l.Close()
	fmt.Fprintln(stderr, runinfo.Loaded(l.Model(), time.Since(loadStart)))
	if c.prompt != "" {
		if prompt, err = l.Tokenizer().Encode(c.prompt, true); err != nil {
			return err
		}
	}
	if len(prompt) == 0 {
		return errors.New("the prompt is empty")
	}

	res := Result{PromptTokens: prompt, Tokens: []int32{}, TopLogprobs: [][]sampler.Logprob{}}
	var text strings.Builder
	timing := runinfo.Start()
	for d, err := range l.StreamTokens(ctx, prompt, p) {
		if err != nil {
			return err
		}
		res.Tokens = append(res.Tokens, d.NewTokens...)
		timing.Tokens(len(d.NewTokens))
		if c.topLogprobs > 0 {
			for _, lp := range d.Logprobs {
				res.TopLogprobs = append(res.TopLogprobs, lp.Top)
			}
		}
		text.WriteString(d.TextDelta)
		if !c.json {
			io.WriteString(stdout, d.TextDelta)
		}
		if d.Finished {
			res.FinishReason = d.FinishReason
			timing.Done(d.Usage.PromptTokens, d.Usage.CachedTokens)
		}
	}
	res.Text = text.String()
	if c.json {
		err = json.NewEncoder(stdout).Encode(res)
	} else {
		_, err = fmt.Fprintln(stdout)
	}
	fmt.Fprintln(stderr, timing.Line(l.Model().Backend().Name()))
	return err
}

// spin shows a spinner with the elapsed time on w while the model loads,
// when w is a terminal; the returned func stops it and clears the line.
func spin(w io.Writer, what string) (stop func()) {
	f, ok := w.(*os.File)
	if !ok {
		return func() {}
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return func() {}
	}
	quit, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		frames := []rune("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
		start := time.Now()
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			fmt.Fprintf(f, "\r%c %s (%.1fs)", frames[i%len(frames)], what, time.Since(start).Seconds())
			select {
			case <-quit:
				fmt.Fprint(f, "\r\033[K")
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
	}
}

func parseIDs(s string) ([]int32, error) {
	var out []int32
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.ParseInt(f, 10, 32)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("--tokens: %q is not a token id", f)
		}
		out = append(out, int32(v))
	}
	return out, nil
}
