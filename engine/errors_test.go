package engine

import (
	"context"
	"errors"
	"iter"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/kernels/cpu"
	"github.com/vkllm/vkllm/kernels/kerneltest"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// firstErr runs a stream to its end and returns its error and how many
// deltas came before it.
func firstErr(s iter.Seq2[Delta, error]) (int, error) {
	n := 0
	for _, err := range s {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// callers are every LLM and Session entry point, each run with ctx and
// one message or prompt.
func callers(l *LLM) map[string]func(ctx context.Context, text string) error {
	p := greedy(2)
	msgs := func(text string) ChatRequest {
		return ChatRequest{Messages: []chat.Message{{Role: "user", Content: text}}}
	}
	stream := func(s iter.Seq2[Delta, error]) error { _, err := firstErr(s); return err }
	return map[string]func(context.Context, string) error{
		"Generate": func(ctx context.Context, text string) error {
			_, err := l.Generate(ctx, []string{text}, p)
			return err
		},
		"Chat": func(ctx context.Context, text string) error {
			_, err := l.Chat(ctx, msgs(text), p)
			return err
		},
		"Stream":     func(ctx context.Context, text string) error { return stream(l.Stream(ctx, text, p)) },
		"StreamChat": func(ctx context.Context, text string) error { return stream(l.StreamChat(ctx, msgs(text), p)) },
		"StreamTokens": func(ctx context.Context, text string) error {
			toks, err := l.Tokenizer().Encode(text, true)
			if err != nil {
				return err
			}
			return stream(l.StreamTokens(ctx, toks, p))
		},
		"Session.Send": func(ctx context.Context, text string) error {
			s := l.NewSession()
			defer s.Close()
			return stream(s.Send(ctx, text, p))
		},
		"Session.SendChat": func(ctx context.Context, text string) error {
			s := l.NewSession()
			defer s.Close()
			return stream(s.SendChat(ctx, msgs(text), p))
		},
	}
}

// TestPromptTooLong: a prompt longer than a request may hold is an error
// of every entry point (it used to end as finish reason "ignored" with a
// nil error), naming both lengths; nothing is queued, and a prompt of
// exactly the context runs.
func TestPromptTooLong(t *testing.T) {
	tiny(t) // opened once per binary, outside the leak check
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 64, MaxSeqs: 2, CacheBytes: -1}) // each short prompt runs: no inference cache
	defer l.Close()
	long := strings.Repeat("x y ", 60)
	if toks, _ := l.Tokenizer().Encode(long, true); len(toks) <= 64 {
		t.Fatalf("the long prompt has %d tokens, not more than 64", len(toks))
	}
	for name, call := range callers(l) {
		t.Run(name, func(t *testing.T) {
			err := call(context.Background(), long)
			if !errors.Is(err, ErrPromptTooLong) || errcode.Of(err) != errcode.PromptTooLong ||
				!strings.Contains(err.Error(), "exceed the context of 64") {
				t.Fatalf("err %v [%s], want ErrPromptTooLong naming the context of 64", err, errcode.Of(err))
			}
			if err := call(context.Background(), "hello world"); err != nil {
				t.Fatalf("a short prompt after it: %v", err)
			}
			checkNoCells(t, l)
		})
	}
	// all or none: one long prompt among short ones runs none
	if _, err := l.Generate(context.Background(), []string{"a", long, "b"}, greedy(2)); !errors.Is(err, ErrPromptTooLong) {
		t.Fatalf("a long prompt among short ones: %v", err)
	}
	if st := l.Stats(); st.Finished["stop"]+st.Finished["length"]+st.Finished["abort"] != uint64(len(callers(l))) {
		t.Fatalf("finished %v: a refused prompt ran", st.Finished)
	}
	full := make([]int32, 64)
	for i := range full {
		full[i] = int32(3 + i)
	}
	n, err := firstErr(l.StreamTokens(context.Background(), full, greedy(0)))
	if err != nil || n != 1 {
		t.Fatalf("a prompt of the whole context: %d deltas, %v", n, err)
	}
	checkNoCells(t, l)
}

// TestNilContext: a nil context.Context is an error, not a panic, and
// queues nothing.
func TestNilContext(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 64, MaxSeqs: 2})
	defer l.Close()
	var nilCtx context.Context
	for name, call := range callers(l) {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			if err := call(nilCtx, "hello"); !errors.Is(err, ErrNilContext) || errcode.Of(err) != errcode.BadParams {
				t.Fatalf("err %v [%s], want ErrNilContext", err, errcode.Of(err))
			}
			checkNoCells(t, l)
		})
	}
}

// TestUnknownRole: every chat entry point refuses a role outside Roles
// (as the server does) with a *RoleError naming the message; "developer"
// is rendered as "system".
func TestUnknownRole(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2})
	defer l.Close()
	bad := ChatRequest{Messages: []chat.Message{{Role: "user", Content: "hi"}, {Role: "wizard", Content: "boo"}}}
	p := greedy(2)
	check := func(what string, err error) {
		t.Helper()
		var re *RoleError
		if !errors.As(err, &re) || re.Index != 1 || re.Role != "wizard" || !errors.Is(err, ErrUnknownRole) || errcode.Of(err) != errcode.BadParams {
			t.Errorf("%s: err %v [%s], want a *RoleError for messages[1]", what, err, errcode.Of(err))
		}
	}
	_, err := l.RenderChat(bad)
	check("RenderChat", err)
	_, err = l.Chat(context.Background(), bad, p)
	check("Chat", err)
	_, err = firstErr(l.StreamChat(context.Background(), bad, p))
	check("StreamChat", err)
	s := l.NewSession()
	_, err = firstErr(s.SendChat(context.Background(), bad, p))
	check("Session.SendChat", err)
	if len(s.Messages()) != 0 {
		t.Errorf("the refused turn joined the session: %v", s.Messages())
	}
	s.Close()
	for _, r := range []string{"system", "developer", "user", "assistant", "tool"} {
		if _, err := l.RenderChat(ChatRequest{Messages: []chat.Message{{Role: r, Content: "hi"}}}); err != nil {
			t.Errorf("role %q refused: %v", r, err)
		}
	}

	dev := []chat.Message{{Role: "developer", Content: "Be brief."}, {Role: "user", Content: "hi"}}
	got, err := l.RenderChat(ChatRequest{Messages: dev})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := l.RenderChat(ChatRequest{Messages: []chat.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "hi"}}})
	if got != want || dev[0].Role != "developer" {
		t.Errorf("developer rendered %q, want %q (the caller's message now %q)", got, want, dev[0].Role)
	}
	checkNoCells(t, l)
}

// TestErrorCodes: the errors a request meets have codes of their own.
func TestErrorCodes(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 64, MaxSeqs: 2, MaxPending: 2})
	bg := context.Background()
	cancelled, cancel := context.WithCancel(bg)
	cancel()
	gen := func(ctx context.Context, prompts []string, p sampler.Params) error {
		_, err := l.Generate(ctx, prompts, p)
		return err
	}
	cases := []struct {
		name string
		err  error
		want errcode.Code
	}{
		{"bad params", gen(bg, []string{"hi"}, sampler.Params{TopP: 2}), errcode.BadParams},
		{"empty prompt", gen(bg, []string{""}, greedy(2)), errcode.EmptyPrompt},
		{"empty conversation", func() error { _, err := l.Chat(bg, ChatRequest{}, greedy(2)); return err }(), errcode.EmptyPrompt},
		{"prompt too long", gen(bg, []string{strings.Repeat("x y ", 60)}, greedy(2)), errcode.PromptTooLong},
		{"queue full", gen(bg, []string{"a", "b", "c"}, greedy(2)), errcode.QueueFull},
		{"cancelled", gen(cancelled, []string{"a"}, greedy(50)), errcode.Cancelled},
		{"bad token", func() error { _, err := firstErr(l.StreamTokens(bg, []int32{1 << 20}, greedy(2))); return err }(), errcode.BadParams},
	}
	checkNoCells(t, l)
	l.Close()
	cases = append(cases, struct {
		name string
		err  error
		want errcode.Code
	}{"closed", gen(bg, []string{"a"}, greedy(2)), errcode.Closed})
	for _, c := range cases {
		if got := errcode.Of(c.err); got != c.want || c.err == nil {
			t.Errorf("%s: Of(%v) = %s, want %s", c.name, c.err, got, c.want)
		}
	}
	// the library's own errors still match as before
	var fe *sampler.FieldError
	if !errors.As(cases[0].err, &fe) || !errors.Is(cases[1].err, sampler.ErrEmptyPrompt) {
		t.Errorf("errors.As/Is lost: %v, %v", cases[0].err, cases[1].err)
	}
}

// TestOptionsContextLen: Options.ContextLen beyond what MaxSeqs
// sequences of the model's positions (256 here) can use is refused,
// naming the numbers, and so is a MaxSeqs out of range; up to it opens.
func TestOptionsContextLen(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	for _, c := range []struct {
		opts Options
		want string // "" when it opens
	}{
		{Options{ContextLen: 257, MaxSeqs: 1}, "ContextLen 257 exceeds the model's 256 positions"},
		{Options{ContextLen: 4097}, "ContextLen 4097 exceeds what 16 sequences of the model's 256 positions can use (4096)"},
		{Options{ContextLen: 512, MaxSeqs: 2}, ""},
		{Options{MaxSeqs: -1}, "MaxSeqs -1 out of range"},
	} {
		l, err := Open(context.Background(), tinyModel, c.opts)
		if c.want == "" {
			if err != nil {
				t.Errorf("%+v: %v", c.opts, err)
			} else {
				l.Close()
			}
			continue
		}
		if !errors.Is(err, models.ErrBadParams) || errcode.Of(err) != errcode.BadParams || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v [%s], want %q", c.opts, err, errcode.Of(err), c.want)
		}
	}
}

// TestForwardPanicFailsRequests: a panic in the loop's forward pass (a
// backend bug) fails that step's requests with a *models.PanicError
// instead of killing the process; the LLM frees their cells and serves
// the next request.
func TestForwardPanicFailsRequests(t *testing.T) {
	fb := &kerneltest.Faulty{Backend: cpu.New(0)}
	defer fb.Close()
	l := openLLM(t, Options{ContextLen: 64, MaxSeqs: 2, Model: []models.Option{models.WithBackend(fb)}})
	defer l.Close()
	p := sampler.Params{MaxTokens: 4, IgnoreEOS: true}
	want, err := l.Generate(context.Background(), []string{"the cat"}, p)
	if err != nil {
		t.Fatal(err)
	}
	fb.Armed.Store(true)
	_, err = l.Generate(context.Background(), []string{"the cat", "a dog"}, p)
	var pe *models.PanicError
	if !errors.As(err, &pe) || pe.Value != kerneltest.FaultValue {
		t.Fatalf("got %v, want a *models.PanicError", err)
	}
	fb.Armed.Store(false)
	checkNoCells(t, l)
	got, err := l.Generate(context.Background(), []string{"the cat"}, p)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got[0].Tokens, want[0].Tokens) {
		t.Fatalf("after the panic: %v, before: %v", got[0].Tokens, want[0].Tokens)
	}
}
