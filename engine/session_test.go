package engine

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

func collectStream(t *testing.T, seq func(func(Delta, error) bool)) Result {
	t.Helper()
	var r Result
	for d, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		r.add(d)
	}
	return r
}

// TestSessionSecondTurn is the session acceptance test: the second turn
// computes only the new text and the first reply's last token (drawn,
// never run), and it says exactly what a fresh run of the whole
// conversation says. Closing the session frees its cells.
func TestSessionSecondTurn(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4})
	defer l.Close()
	fresh := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4, NoPrefixCache: true})
	defer fresh.Close()
	p := sampler.Params{MaxTokens: 10, IgnoreEOS: true}
	s := l.NewSession()
	first := collectStream(t, s.Send(context.Background(), "hello world", p))
	history := s.Tokens()
	delta, _ := l.Tokenizer().Encode(" the quick brown fox", false)
	second := collectStream(t, s.Send(context.Background(), " the quick brown fox", p))
	if computed := second.Usage.PromptTokens - second.Usage.CachedTokens; computed != len(delta)+1 {
		t.Fatalf("second turn computed %d prompt tokens, want %d (the delta and the last reply token)", computed, len(delta)+1)
	}
	full := append(slices.Clone(history), delta...)
	if second.Usage.PromptTokens != len(full) || len(history) != first.Usage.PromptTokens+len(first.Tokens) {
		t.Fatalf("prompt %d tokens, want %d", second.Usage.PromptTokens, len(full))
	}
	want := collectStream(t, fresh.StreamTokens(context.Background(), full, p))
	if !slices.Equal(second.Tokens, want.Tokens) || second.Text != want.Text {
		t.Fatalf("session %v, fresh %v", second.Tokens, want.Tokens)
	}
	if !slices.Equal(s.Tokens(), append(full, second.Tokens...)) {
		t.Fatal("the conversation does not hold the second turn")
	}
	for _, err := range s.SendChat(context.Background(), ChatRequest{Messages: []chat.Message{{Role: "user", Content: "x"}}}, p) {
		if !errors.Is(err, ErrSessionKind) {
			t.Fatalf("chat on a text session: %v", err)
		}
	}
	if u, _ := l.cellsUsed(); u != len(full)+len(second.Tokens)-1 {
		t.Fatalf("idle session holds %d cells, want %d", u, len(full)+len(second.Tokens)-1)
	}
	s.Close()
	if u, _ := l.cellsUsed(); u != 0 {
		t.Fatalf("%d cells in use after Close", u)
	}
	for _, err := range s.Send(context.Background(), "more", p) {
		if !errors.Is(err, ErrSessionClosed) {
			t.Fatalf("send after close: %v", err)
		}
	}
}

// TestSessionChatTurns: a chat session's turns reuse the cache and each
// reply equals a fresh run of the rendered conversation.
func TestSessionChatTurns(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4})
	defer l.Close()
	fresh := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4, NoPrefixCache: true})
	defer fresh.Close()
	p := sampler.Params{MaxTokens: 6, IgnoreEOS: true}
	s := l.NewSession()
	defer s.Close()
	for i, msg := range []string{"hello world", "Go is fun to write", "über straße"} {
		req := ChatRequest{Messages: []chat.Message{{Role: "user", Content: msg}}}
		conv := append(s.Messages(), req.Messages...)
		got := collectStream(t, s.SendChat(context.Background(), req, p))
		want, err := fresh.Chat(context.Background(), ChatRequest{Messages: conv}, p)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.Tokens, want.Tokens) {
			t.Fatalf("turn %d: session %v, fresh %v", i, got.Tokens, want.Tokens)
		}
		if i > 0 && got.Usage.CachedTokens == 0 {
			t.Fatalf("turn %d reused nothing", i)
		}
		prompt, err := l.TokenizeChat(ChatRequest{Messages: conv}, true)
		if err != nil {
			t.Fatal(err)
		}
		if toks := s.Tokens(); !slices.Equal(toks, append(prompt, got.Tokens...)) {
			t.Fatalf("turn %d: Tokens() %v, want the rendered prompt and the reply (%d+%d tokens)", i, toks, len(prompt), len(got.Tokens))
		}
		t.Logf("turn %d: %d prompt tokens, %d cached", i, got.Usage.PromptTokens, got.Usage.CachedTokens)
	}
	if m := s.Messages(); len(m) != 6 || m[5].Role != "assistant" {
		t.Fatalf("conversation %+v", m)
	}
}

// TestStatsQueuedAbort: a request cancelled while it waits for a
// sequence (the only one is taken) is counted as finished with "abort".
func TestStatsQueuedAbort(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 1})
	defer l.Close()
	long := sampler.Params{MaxTokens: 200, IgnoreEOS: true}
	ctx, cancel := context.WithCancel(context.Background())
	running, first := make(chan struct{}), make(chan struct{})
	slow := long
	slow.Constraint = slowDraws{} // 200 tokens take 2 s: the second request queues long before
	go func() {                   // takes the only slot
		defer close(first)
		for range l.Stream(ctx, "hello world", slow) {
			select {
			case <-running:
			default:
				close(running)
			}
		}
	}()
	<-running
	qctx, qcancel := context.WithCancel(context.Background())
	queued := l.Stream(qctx, "a", long)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, err := range queued {
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Error(err)
			}
		}
	}()
	for l.Stats().Waiting == 0 { // wait until it waits
		select {
		case <-first:
			t.Fatal("the first request ended before the second one queued")
		default:
		}
		runtime.Gosched()
	}
	qcancel()
	<-done
	cancel()
	<-first // its abort is sent
	checkNoCells(t, l)
	if st := l.Stats(); st.Finished["abort"] != 2 || st.Waiting != 0 {
		t.Fatalf("stats %+v, want 2 aborts", st)
	}
}

// slowDraws allows every token and takes 10 ms a draw.
// TestStatsSettleAfterCancel: once a stream has returned after a break
// or a cancel, Stats counts its request as finished, not running.
func TestStatsSettleAfterCancel(t *testing.T) {
	tiny(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 2})
	defer l.Close()
	slow := sampler.Params{MaxTokens: 200, IgnoreEOS: true, Constraint: slowDraws{}} // 10 ms a token
	n := 0
	for _, err := range l.Stream(context.Background(), "hello world", slow) {
		if err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
	if st := l.Stats(); st.Running != 0 || st.Waiting != 0 || st.Finished["abort"] != 1 {
		t.Fatalf("after a break: running %d, waiting %d, aborts %d; want 0, 0, 1", st.Running, st.Waiting, st.Finished["abort"])
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n = 0
	for _, err := range l.Stream(ctx, "hello world", slow) {
		if n++; n == 3 {
			cancel()
		}
		if err != nil {
			break
		}
	}
	if st := l.Stats(); st.Running != 0 || st.Waiting != 0 || st.Finished["abort"] != 2 {
		t.Fatalf("after a cancel: running %d, waiting %d, aborts %d; want 0, 0, 2", st.Running, st.Waiting, st.Finished["abort"])
	}
}

type slowDraws struct{}

func (slowDraws) Allow(allowed []bool) {
	time.Sleep(10 * time.Millisecond)
	for i := range allowed {
		allowed[i] = true
	}
}

func (slowDraws) Accept(int32) {}
