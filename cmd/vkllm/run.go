package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/vkllm/vkllm/cmd/internal/runinfo"
	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// Result is what `vkllm run --json` prints.
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
	ctxLen                 int // --ctx: KV cells, 0 for engine.Options' default
	seed                   int64
	json, ignoreEOS        bool
	params                 sampler.Params
	chat                   bool
	system                 string
	draft                  string // speculative decoding: "ngram" or a draft model's path
	draftMax               int
	lora                   string // a LoRA adapter to run with, "" for none
}

// cliAdapter is the name run gives its --lora adapter.
const cliAdapter = "lora"

// adapterOpts are the stream options that run c's adapter, if any.
func (c config) adapterOpts() []engine.StreamOption {
	if c.lora == "" {
		return nil
	}
	return []engine.StreamOption{engine.WithAdapter(cliAdapter)}
}

// runModel is `vkllm run`. With --prompt or --tokens it generates one
// completion and streams it to stdout; without either, or with --chat, it
// is an interactive chat through the model's chat template (ChatML when it
// has none).
//
// Generation is greedy (temperature 0) and stops after 32 tokens unless
// the flags say otherwise; a chat samples at temperature 0.7, top-p 0.9,
// with up to 1024 tokens an answer. While the model loads, a progress bar
// runs on stderr when stderr is a terminal; then stderr gets what was
// loaded, and after each answer a timing line (also with --json):
//
//	loaded SmolLM2-135M-Instruct (llama, Q4_1, 135M params, 94 MiB) on cpu in 0.21 s
//	prompt 6 tokens (312.5 tok/s), generated 32 tokens (61.0 tok/s), first token after 0.019 s, on cpu
//
// --json prints one object on stdout at the end instead of streaming:
//
//	{"prompt_tokens":[…],"tokens":[…],"text":"…","top_logprobs":[[{"id":N,"logprob":F},…],…],"finish_reason":"length"}
//
// In a chat, type a message and press Enter; the answer streams as it is
// generated. Commands:
//
//	/reset        forget the conversation (the system prompt stays)
//	/system TEXT  set the system prompt (and forget the conversation)
//	/quit         leave (so does end of input, Ctrl-D)
//
// Ctrl-C while an answer streams stops that answer (it is dropped from the
// history, with the question); Ctrl-C at the prompt asks for a second one,
// which leaves. Ctrl-C while the model loads stops the load.
func runModel(ctx context.Context, e env, args []string) int {
	var c config
	p := &c.params
	fs := newFlags(e, "run")
	fs.StringVar(&c.model, "model", "", "model folder or .gguf file, or a Hub name hf://OWNER/REPO[:QUANT] (pulled first)")
	fs.StringVar(&c.lora, "lora", "", "run with this LoRA adapter: a PEFT folder (adapter_config.json, adapter_model.safetensors) or a llama.cpp GGUF LoRA file, or a Hub name hf://OWNER/REPO[:QUANT|/FILE] (pulled first)")
	fs.StringVar(&c.prompt, "prompt", "", "prompt text to complete")
	fs.StringVar(&c.tokens, "tokens", "", "prompt as comma-separated token ids")
	fs.BoolVar(&c.chat, "chat", false, "chat interactively (the default without --prompt and --tokens)")
	fs.Func("system", `chat: the system prompt (\n, \t and \\ are a new line, a tab and a backslash)`, func(s string) error {
		c.system = unescape(s)
		return nil
	})
	c.backend = runinfo.BackendFlag(fs)
	// The defaults of these three depend on the mode, so the flags have
	// none of their own (-h would show two); runModel sets them.
	fs.IntVar(&c.maxTokens, "max-tokens", 0, "tokens to generate (default 32; a chat's answers 1024)")
	fs.Float64Var(&p.Temperature, "temperature", 0, "sampling temperature in [0, 2]; 0 is greedy (default 0; a chat 0.7)")
	fs.Float64Var(&p.TopP, "top-p", 0, "nucleus sampling: keep the most likely tokens up to this mass, (0, 1] (default 1; a chat 0.9)")
	fs.IntVar(&c.ctxLen, "ctx", 0, "context length in tokens, prompt and answers together (0: the model's positions, at most 4096)")
	fs.IntVar(&p.TopK, "top-k", 0, "keep the K most likely tokens (0: off)")
	fs.Float64Var(&p.MinP, "min-p", 0, "drop tokens less likely than min-p × the most likely one, [0, 1]")
	fs.Int64Var(&c.seed, "seed", -1, "sampling seed (-1: random)")
	fs.Float64Var(&p.RepetitionPenalty, "repetition-penalty", 1, "penalty on tokens of the prompt and output, (0, 2]")
	fs.Float64Var(&p.PresencePenalty, "presence-penalty", 0, "penalty on tokens already generated, [-2, 2]")
	fs.Float64Var(&p.FrequencyPenalty, "frequency-penalty", 0, "penalty by how often a token was generated, [-2, 2]")
	fs.Func("stop", `stop at this text (repeatable; not printed; \n, \t and \\ are a new line, a tab and a backslash)`, func(s string) error {
		p.Stop = append(p.Stop, unescape(s))
		return nil
	})
	fs.IntVar(&c.topLogprobs, "top-logprobs", 0, "report the K most likely tokens per step (0-20, with --json)")
	fs.BoolVar(&c.json, "json", false, "print one JSON object at the end")
	fs.BoolVar(&c.ignoreEOS, "ignore-eos", false, "do not stop at an end-of-sequence token")
	fs.StringVar(&c.draft, "draft", "", "speculative decoding: \"ngram\" (prompt lookup) or a draft model sharing the model's vocabulary (a path or hf:// name)")
	fs.IntVar(&c.draftMax, "draft-max", 0, "the most draft tokens per step, [1, 64] (default 8; with --draft)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	rctx, cancel := e.interruptible(ctx)
	err := resolvePaths(rctx, e.stderr, flagPath{"--draft", &c.draft}) // checkParams opens the draft; the model and adapter are pulled by open
	cancel()
	if err != nil {
		fmt.Fprintf(e.stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["prompt"] && c.prompt == "" {
		err := errcode.Wrap(errcode.EmptyPrompt, errors.New("--prompt is empty; leave it out to chat"))
		fmt.Fprintf(e.stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	if c.prompt == "" && c.tokens == "" {
		c.chat = true
	}
	defaults := map[string]float64{"temperature": 0, "top-p": 1, "max-tokens": 32}
	if c.chat {
		defaults = map[string]float64{"temperature": 0.7, "top-p": 0.9, "max-tokens": 1024}
	}
	for name, v := range defaults {
		if !set[name] {
			fs.Set(name, strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	if c.chat {
		err = chatREPL(ctx, e, c)
	} else {
		ctx, cancel := e.interruptible(ctx)
		defer cancel()
		err = generate(ctx, c, e.stdout, e.stderr)
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "error: %v [%s]\n", err, errcode.Of(err))
		return 1
	}
	return 0
}

// open loads the model of c, drawing its progress on stderr when that is
// a terminal, then prints what was loaded.
func open(ctx context.Context, c config, stderr io.Writer) (*engine.LLM, error) {
	path, lora := c.model, c.lora
	if err := resolvePaths(ctx, stderr, flagPath{"--model", &path}, flagPath{"--lora", &lora}); err != nil {
		return nil, err
	}
	b := newBar(stderr, "loading "+c.model, false)
	start := time.Now()
	opts := engine.Options{MaxSeqs: 1, ContextLen: c.ctxLen, Backend: *c.backend, Progress: b.Update, Draft: c.draft, DraftMax: c.draftMax}
	if lora != "" {
		opts.Adapters = map[string]string{cliAdapter: lora}
	}
	l, err := engine.Open(ctx, path, opts)
	b.Done(true)
	if err != nil {
		return nil, err
	}
	fmt.Fprintln(stderr, runinfo.Loaded(l.Model(), time.Since(start)))
	return l, nil
}

// checkParams checks the flags shared by both modes, before a load that
// can take a while.
func checkParams(c config) (sampler.Params, error) {
	p := c.params
	if err := runinfo.CheckBackend(*c.backend); err != nil {
		return p, err
	}
	if err := checkDraft(c.draft, c.draftMax); err != nil {
		return p, err
	}
	if c.ctxLen < 0 {
		return p, badFlag("--ctx must be ≥ 0 (0: the model's positions, at most 4096), got %d", c.ctxLen)
	}
	p.MaxTokens, p.IgnoreEOS, p.Logprobs = c.maxTokens, c.ignoreEOS, c.topLogprobs
	if c.seed >= 0 {
		s := uint64(c.seed)
		p.Seed = &s
	}
	if err := p.Validate(1 << 30); err != nil {
		return p, errcode.Wrap(errcode.BadParams, err)
	}
	return p, nil
}

// badFlag is a flag's error: BAD_PARAMS, as a bad parameter of the API.
func badFlag(format string, a ...any) error {
	return errcode.Wrap(errcode.BadParams, fmt.Errorf(format, a...))
}

// unescape reads \n, \t and \\ in s as a new line, a tab and a
// backslash, as llama.cpp's tools do: a shell passes "\n\n" as four
// characters. Any other backslash stays as it is.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			case 't':
				b.WriteByte('\t')
				i++
				continue
			case '\\':
				b.WriteByte('\\')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// chatREPL loads the model and runs the conversation on stdin.
func chatREPL(ctx context.Context, e env, c config) error {
	switch {
	case c.model == "":
		return badFlag("--model is required")
	case c.prompt != "" || c.tokens != "" || c.json || c.topLogprobs != 0:
		return badFlag("--prompt, --tokens, --json and --top-logprobs do not go with --chat")
	case c.maxTokens < 1:
		return badFlag("--max-tokens must be ≥ 1, got %d", c.maxTokens)
	}
	p, err := checkParams(c)
	if err != nil {
		return err
	}
	intr := e.signals()
	loadCtx, cancel := context.WithCancel(ctx)
	loaded := make(chan struct{})
	go func() { // Ctrl-C while loading stops the load
		select {
		case <-intr:
			cancel()
		case <-loaded:
		}
	}()
	l, err := open(loadCtx, c, e.stderr)
	close(loaded)
	cancel()
	if err != nil {
		return err
	}
	defer l.Close()
	r := &repl{m: l, params: p, opts: c.adapterOpts(), system: c.system, out: e.stdout, intr: intr,
		stats: e.stderr, backend: l.Model().Backend().Name()}
	r.loop(e.stdin)
	return nil
}

// streamer is what the REPL needs of a model; *engine.LLM is one.
type streamer interface {
	StreamChat(ctx context.Context, req engine.ChatRequest, p sampler.Params, opts ...engine.StreamOption) iter.Seq2[engine.Delta, error]
}

func generate(ctx context.Context, c config, stdout, stderr io.Writer) error {
	switch {
	case c.model == "":
		return badFlag("--model is required")
	case (c.prompt == "") == (c.tokens == ""):
		return badFlag("give exactly one of --prompt and --tokens")
	case c.maxTokens < 1:
		return badFlag("--max-tokens must be ≥ 1, got %d", c.maxTokens)
	case c.topLogprobs < 0 || c.topLogprobs > 20:
		return badFlag("--top-logprobs must be in [0, 20], got %d", c.topLogprobs)
	case c.system != "":
		return badFlag("--system is for a chat (--chat)")
	}
	p, err := checkParams(c)
	if err != nil {
		return err
	}
	var prompt []int32
	if c.tokens != "" {
		if prompt, err = parseIDs(c.tokens); err != nil {
			return err
		}
	}

	l, err := open(ctx, c, stderr)
	if err != nil {
		return err
	}
	defer l.Close()
	if c.prompt != "" {
		if prompt, err = l.Tokenize(c.prompt, true); err != nil {
			return err
		}
	}
	if len(prompt) == 0 {
		return errcode.Wrap(errcode.EmptyPrompt, errors.New("the prompt is empty"))
	}

	res := Result{PromptTokens: prompt, Tokens: []int32{}, TopLogprobs: [][]sampler.Logprob{}}
	var text strings.Builder
	timing := runinfo.Start()
	for d, err := range l.StreamTokens(ctx, prompt, p, c.adapterOpts()...) {
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
	if st := l.Stats(); st.DraftTokens > 0 {
		fmt.Fprintf(stderr, "drafts: %d of %d kept (%.0f%%)\n", st.DraftAccepted, st.DraftTokens, 100*float64(st.DraftAccepted)/float64(st.DraftTokens))
	}
	return err
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
			return nil, badFlag("--tokens: %q is not a token id", f)
		}
		out = append(out, int32(v))
	}
	return out, nil
}

// repl is the conversation and its loop.
type repl struct {
	m       streamer
	params  sampler.Params
	opts    []engine.StreamOption // per answer: the adapter, if any
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
	for d, err := range r.m.StreamChat(ctx, engine.ChatRequest{Messages: msgs}, r.params, r.opts...) {
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
