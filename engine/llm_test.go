package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/vkllm/vkllm/internal/testmodel"
	"github.com/vkllm/vkllm/sampler"
)

func openLLM(t testing.TB, opts Options) *LLM {
	t.Helper()
	l, err := Open(context.Background(), tinyModel, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// openToolLLM opens the tiny model with 1024 positions: a prompt that
// describes tools in the Hermes format is longer than its 256.
func openToolLLM(t testing.TB, maxSeqs int) *LLM {
	t.Helper()
	l, err := Open(context.Background(), testmodel.LongContext(t, tinyModel, 1024), Options{ContextLen: 1024, MaxSeqs: maxSeqs})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func checkNoCells(t testing.TB, l *LLM) {
	t.Helper()
	if err := l.ClearCache(); err != nil {
		t.Fatal(err)
	}
	used, err := l.cellsUsed()
	if err != nil {
		t.Fatal(err)
	}
	if used != 0 {
		t.Fatalf("%d cells in use", used)
	}
	p := l.loop.pendingCount()
	if p != 0 {
		t.Fatalf("%d requests still pending", p)
	}
}

// preamble is TestRandomized's shared prompt start: over two prefix
// blocks (BlockSize tokens each) of the tiny model's tokenizer (44 tokens).
var preamble = strings.Repeat("the quick brown fox ", 3)

var words = []string{"hello world", "the quick brown fox", "a", "Go is fun to write", "1 2 3 4 5", "über straße", "lorem ipsum dolor sit amet"}

func TestGenerateMatchesEngine(t *testing.T) {
	tiny(t) // opened once per binary, outside the leak check
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4})
	seed := uint64(3)
	p := sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 16, IgnoreEOS: true}
	res, err := l.Generate(context.Background(), words, p)
	if err != nil {
		t.Fatal(err)
	}
	checkNoCells(t, l)
	l.Close()
	// each prompt alone on a bare Engine
	for i, w := range words {
		toks, _ := tinyTok.Encode(w, true)
		e, _ := newEngine(t, modelsParams(256, 1), Config{})
		want := runAll(t, e, [][]int32{toks}, p)["0"]
		if !slices.Equal(res[i].Tokens, want.tokens) || res[i].Text != want.text || res[i].FinishReason != "length" ||
			res[i].Usage.PromptTokens != len(toks) || res[i].Usage.CompletionTokens != 16 {
			t.Fatalf("prompt %d: %+v, want %v %q", i, res[i], want.tokens, want.text)
		}
	}
}

func TestGenerateErrors(t *testing.T) {
	tiny(t) // opened once per binary, outside the leak check
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 64, MaxSeqs: 2, MaxPending: 2})
	defer l.Close()
	var fe *sampler.FieldError
	if _, err := l.Generate(context.Background(), []string{"hi"}, sampler.Params{TopP: 2}); !errors.As(err, &fe) {
		t.Fatalf("bad params: %v", err)
	}
	if _, err := l.Generate(context.Background(), []string{"a", "b", "c"}, greedy(2)); !errors.Is(err, ErrQueueFull) {
		t.Fatalf("3 prompts with MaxPending 2: %v", err)
	}
	if _, err := l.Generate(context.Background(), []string{"a", "b"}, greedy(2)); err != nil {
		t.Fatalf("2 prompts: %v", err)
	}
	checkNoCells(t, l)
	l.Close()
	if _, err := l.Generate(context.Background(), []string{"a"}, greedy(2)); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestStreamCancelFreesCells(t *testing.T) {
	tiny(t) // opened once per binary, outside the leak check
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4})
	defer l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var last error
	for d, err := range l.Stream(ctx, "hello", greedy(200)) {
		if err != nil {
			last = err
			break
		}
		if d.Finished {
			t.Fatal("finished before the cancel")
		}
		if n++; n == 5 {
			cancel()
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("stream ended with %v", last)
	}
	checkNoCells(t, l)
	// breaking out of the loop aborts too
	for range l.Stream(context.Background(), "hello", greedy(200)) {
		break
	}
	checkNoCells(t, l)
	// and a stream run to its end reports it
	var text strings.Builder
	var fin Delta
	for d, err := range l.Stream(context.Background(), "hello", greedy(10)) {
		if err != nil {
			t.Fatal(err)
		}
		text.WriteString(d.TextDelta)
		fin = d
	}
	if !fin.Finished || fin.FinishReason != "length" || fin.Usage.CompletionTokens != 10 {
		t.Fatalf("last delta %+v", fin)
	}
	checkNoCells(t, l)
}

func TestCloseWithRequestsInFlight(t *testing.T) {
	tiny(t) // opened once per binary, outside the leak check
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4})
	errc := make(chan error, 1)
	go func() {
		_, err := l.Generate(context.Background(), []string{"a", "b", "c"}, greedy(200))
		errc <- err
	}()
	time.Sleep(20 * time.Millisecond)
	l.Close()
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("Generate during Close: %v", err)
	}
	l.Close() // twice is fine
}

// TestRandomized runs many streams and sessions from many goroutines
// with random cancels, early breaks, aborts, stop strings and
// lengths on small caches, and checks that every request ends exactly
// once, no goroutine is left, and no cell stays in use.
func TestRandomized(t *testing.T) {
	tiny(t) // opened once per binary, outside the leak check
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	n := 1000
	if testing.Short() {
		n = 120
	}
	l := openLLM(t, Options{ContextLen: 128, MaxSeqs: 8, MaxBatchTokens: 32})
	defer l.Close()
	var wg sync.WaitGroup
	var mu sync.Mutex
	ends := map[string]int{}       // how each request ended
	started := 0                   // requests (turns) started
	sem := make(chan struct{}, 64) // clients at once
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := rand.New(rand.NewPCG(uint64(i), 77))
			seed := r.Uint64()
			p := sampler.Params{Temperature: r.Float64() * 1.5, Seed: &seed, MaxTokens: 1 + r.IntN(16), IgnoreEOS: r.IntN(2) == 0}
			if r.IntN(3) == 0 {
				p.Stop = []string{string(rune('a' + r.IntN(26))), "th"}
			}
			prompt := strings.Repeat(words[r.IntN(len(words))]+" ", 1+r.IntN(3))
			if r.IntN(4) == 0 {
				// a shared preamble of whole prefix blocks, so that prefix
				// hits do not hinge on a few long prompts' timing
				prompt = preamble + words[r.IntN(len(words))]
			}
			if r.IntN(40) == 0 {
				prompt = strings.Repeat("x y ", 60) // longer than the cache: ignored
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			mode := r.IntN(5) // 0: cancel after k deltas, 1: break after k, 2: a session of turns, else run out
			k := r.IntN(6)
			turns := 1
			var sess *Session
			if mode == 2 {
				sess = l.NewSession()
				turns = 1 + r.IntN(3)
			}
			for turn := range turns {
				mu.Lock()
				started++
				mu.Unlock()
				end, seen, finals := "", 0, 0
				stream := l.Stream(ctx, prompt, p)
				if sess != nil {
					stream = sess.Send(ctx, prompt, p)
				}
				for d, err := range stream {
					if end != "" {
						t.Errorf("request %d: a delta after its end (%s)", i, end)
					}
					if err != nil {
						end = "error: " + err.Error()
						continue
					}
					if d.Finished {
						finals++
						end = d.FinishReason
						if d.Usage.CompletionTokens > p.MaxTokens {
							t.Errorf("request %d: %d tokens > max %d", i, d.Usage.CompletionTokens, p.MaxTokens)
						}
					}
					seen++
					if seen == k && mode == 0 {
						cancel()
					}
					if seen == k && mode == 1 && end == "" {
						end = "break"
						break
					}
					if sess != nil && seen == k && turn == 1 && r.IntN(2) == 0 {
						sess.Close() // a close in the middle of a turn aborts it
					}
				}
				if finals > 1 || end == "" {
					t.Errorf("request %d: %d final outputs, end %q", i, finals, end)
				}
				mu.Lock()
				ends[end]++
				mu.Unlock()
			}
			if sess != nil {
				sess.Close()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(240 * time.Second):
		t.Fatal("requests lost: not every stream ended")
	}
	used, err := l.cellsUsed() // no sessions left; cached prefixes may hold cells
	if err != nil {
		t.Fatal(err)
	}
	checkNoCells(t, l)
	left := l.loop.pendingCount()
	if left != 0 {
		t.Fatalf("%d requests still pending", left)
	}
	st := l.Stats()
	t.Logf("ends: %v; %d cells were held by cached prefixes; stats %+v", ends, used, st)
	total := 0
	for _, c := range ends {
		total += c
	}
	if total != started {
		t.Fatalf("%d ends for %d requests", total, started)
	}
	if st.Preemptions == 0 || st.PrefixHits == 0 {
		t.Fatalf("no preemption or no prefix hit: the test does not test them")
	}
}

// TestStatsCountsInFlight: from the moment a request is accepted until
// its first token arrives, LLM.Stats counts it as running or waiting,
// also while the worker that took it from the queue is in the step that
// adds it (its published Stats still from before). Callers that wait for
// Running and Waiting to reach zero (the server's drain, tests) rely on
// that.
func TestStatsCountsInFlight(t *testing.T) {
	l := openLLM(t, Options{ContextLen: 512})
	defer l.Close()
	prompt := strings.Repeat("the quick brown fox ", 10) // about 140 of the tiny model's 256 positions
	for i := range 30 {
		ids, boxes, err := l.submit([]string{prompt}, sampler.Params{MaxTokens: 3})
		if err != nil {
			t.Fatal(err)
		}
		for {
			st := l.Stats()
			outs, err, done := boxes[0].take()
			if err != nil {
				t.Fatal(err)
			}
			if len(outs) > 0 || done {
				break
			}
			if st.Running+st.Waiting == 0 {
				t.Fatalf("request %d (%s) accepted, no token yet, but Stats shows none running or waiting: %+v", i, ids[0], st)
			}
		}
		for _, _, done := boxes[0].take(); !done; _, _, done = boxes[0].take() {
			<-boxes[0].signal
		}
	}
	checkNoCells(t, l)
}
