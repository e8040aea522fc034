package engine

import (
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/vkllm/vkllm/models"
)

var (
	adaptersOnce sync.Once
	adapterIDs   map[string]models.AdapterID
	adaptersErr  error
)

// tinyAdapters loads testdata's two qwen2-tiny adapters on the shared
// tiny model once, as "a" and "b".
func tinyAdapters(t testing.TB) map[string]models.AdapterID {
	t.Helper()
	m, _ := tiny(t)
	adaptersOnce.Do(func() {
		adapterIDs = map[string]models.AdapterID{}
		for name, dir := range map[string]string{"a": "qwen2-tiny-lora-a", "b": "qwen2-tiny-lora-b"} {
			id, err := m.LoadAdapter(filepath.Join("../testdata/lora", dir))
			if err != nil {
				adaptersErr = err
				return
			}
			adapterIDs[name] = id
		}
	})
	if adaptersErr != nil {
		t.Fatal(adaptersErr)
	}
	return adapterIDs
}

// TestAdaptersMixedEqualAlone: requests of two adapters and of none,
// run together (prefill and decode steps mixed in batches), each give
// the tokens they give alone; the adapters change the output.
func TestAdaptersMixedEqualAlone(t *testing.T) {
	ids := tinyAdapters(t)
	prs := prompts(21, 6, 5, 30)
	names := []string{"a", "b", "", "a", "", "b"}
	for name, p := range mixed() {
		t.Run(name, func(t *testing.T) {
			e, _ := newEngine(t, modelsParams(256, 6), Config{Adapters: ids})
			for i, pr := range prs {
				if err := e.Add(Request{ID: string(rune('A' + i)), Prompt: pr, Params: p, Adapter: names[i]}); err != nil {
					t.Fatal(err)
				}
			}
			got := drain(t, e)
			for i, pr := range prs {
				alone, _ := newEngine(t, modelsParams(256, 6), Config{Adapters: ids})
				id := string(rune('A' + i))
				want := run1(t, alone, Request{ID: id, Prompt: pr, Params: p, Adapter: names[i]})
				if !slices.Equal(got[id].tokens, want.tokens) {
					t.Fatalf("request %s (adapter %q): together %v, alone %v", id, names[i], got[id].tokens, want.tokens)
				}
			}
		})
	}
	e, _ := newEngine(t, modelsParams(256, 6), Config{Adapters: ids})
	base := run1(t, e, Request{ID: "x", Prompt: prs[0], Params: greedy(16)})
	withA := run1(t, e, Request{ID: "y", Prompt: prs[0], Params: greedy(16), Adapter: "a"})
	if slices.Equal(base.tokens, withA.tokens) {
		t.Fatal("adapter a does not change the greedy tokens")
	}
}

// TestAdapterPrefixCache: K/V cached under one adapter (prefix or
// session) are reused only by requests of that adapter.
func TestAdapterPrefixCache(t *testing.T) {
	ids := tinyAdapters(t)
	r := rand.New(rand.NewPCG(31, 32))
	pr := prompt(r, 2*BlockSize+5)
	e, ctx := newEngine(t, modelsParams(256, 8), Config{PrefixCache: true, Adapters: ids}) // 4 retained ids: nothing evicted
	run1(t, e, Request{ID: "a1", Prompt: pr, Params: greedy(4), Adapter: "a"})
	for _, c := range []struct {
		adapter string
		cached  int
	}{{"", 0}, {"b", 0}, {"a", 2 * BlockSize}} {
		got := run1(t, e, Request{ID: "q" + c.adapter, Prompt: pr, Params: greedy(8), Adapter: c.adapter})
		fresh, _ := newEngine(t, modelsParams(256, 4), Config{Adapters: ids})
		want := run1(t, fresh, Request{ID: "f", Prompt: pr, Params: greedy(8), Adapter: c.adapter})
		if got.usage.CachedTokens != c.cached || !slices.Equal(got.tokens, want.tokens) {
			t.Fatalf("adapter %q: %d cached (want %d), tokens %v, fresh %v", c.adapter, got.usage.CachedTokens, c.cached, got.tokens, want.tokens)
		}
	}
	// A session continued with another adapter recomputes its turn.
	run1(t, e, Request{ID: "s1", Prompt: pr, Params: greedy(4), Session: "s", Adapter: "a"})
	got := run1(t, e, Request{ID: "s2", Prompt: pr, Params: greedy(8), Session: "s", Adapter: "b"})
	fresh, _ := newEngine(t, modelsParams(256, 4), Config{Adapters: ids})
	want := run1(t, fresh, Request{ID: "f", Prompt: pr, Params: greedy(8), Adapter: "b"})
	if got.usage.CachedTokens != 0 || !slices.Equal(got.tokens, want.tokens) {
		t.Fatalf("session with another adapter: %d cached, tokens %v, fresh %v", got.usage.CachedTokens, got.tokens, want.tokens)
	}
	if err := e.EndSession("s"); err != nil {
		t.Fatal(err)
	}
	if err := e.ClearCache(); err != nil {
		t.Fatal(err)
	}
	if ctx.Used() != 0 {
		t.Fatalf("%d cells used after ClearCache", ctx.Used())
	}
}

// TestAdapterErrorsAndStats: an unknown adapter name is refused; Stats
// names the adapters of running and waiting requests.
func TestAdapterErrorsAndStats(t *testing.T) {
	ids := tinyAdapters(t)
	e, _ := newEngine(t, modelsParams(256, 2), Config{MaxSeqs: 1, Adapters: ids})
	if err := e.Add(Request{ID: "x", Prompt: []int32{5}, Params: greedy(2), Adapter: "nope"}); !errors.Is(err, ErrUnknownAdapter) {
		t.Fatalf("unknown adapter: %v", err)
	}
	for _, r := range []Request{
		{ID: "1", Prompt: []int32{5, 6}, Params: greedy(4), Adapter: "b"},
		{ID: "2", Prompt: []int32{5, 7}, Params: greedy(4), Adapter: "a"},
		{ID: "3", Prompt: []int32{5, 8}, Params: greedy(4)},
	} {
		if err := e.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Step(); err != nil {
		t.Fatal(err)
	}
	st := e.Stats()
	if !slices.Equal(st.RunningAdapters, []string{"b"}) || !slices.Equal(st.WaitingAdapters, []string{"a"}) {
		t.Fatalf("running adapters %v, waiting %v", st.RunningAdapters, st.WaitingAdapters)
	}
	drain(t, e)
	if st := e.Stats(); st.RunningAdapters != nil || st.WaitingAdapters != nil {
		t.Fatalf("idle: running adapters %v, waiting %v", st.RunningAdapters, st.WaitingAdapters)
	}
	m, tok := tiny(t)
	ctx, err := m.NewContext(modelsParams(64, 1))
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Close()
	if _, err := New(m, ctx, tok, Config{Adapters: map[string]models.AdapterID{"x": 99}}); err == nil {
		t.Fatal("New took an adapter id not loaded")
	}
}
