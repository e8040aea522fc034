package engine

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/sampler/grammar"
)

// streamAll runs one Stream to its end and returns its deltas.
func streamAll(t *testing.T, l *LLM, prompt string, p sampler.Params, opts ...StreamOption) []Delta {
	t.Helper()
	var ds []Delta
	for d, err := range l.Stream(context.Background(), prompt, p, opts...) {
		if err != nil {
			t.Fatal(err)
		}
		ds = append(ds, d)
	}
	return ds
}

// deltaText is the stream's pieces of text, tokens and finish reasons, in
// order: a hit must give the same pieces, not only the same whole.
func deltaText(ds []Delta) []string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%d|%q|%v|%s", d.Index, d.TextDelta, d.NewTokens, d.FinishReason))
	}
	return out
}

// TestInferenceCacheHit: a repeated greedy or seeded request, streamed or
// not, is answered with the same deltas and no forward pass, and counts
// a hit; its usage reports the whole prompt cached.
func TestInferenceCacheHit(t *testing.T) {
	seed := uint64(7)
	for _, c := range []struct {
		name string
		p    sampler.Params
		opts []StreamOption
	}{
		{"greedy", sampler.Params{MaxTokens: 12, IgnoreEOS: true}, nil},
		{"seeded", sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 12, IgnoreEOS: true}, nil},
		{"choices", sampler.Params{Temperature: 0.8, Seed: &seed, MaxTokens: 6, IgnoreEOS: true}, []StreamOption{WithChoices(3)}},
		{"logprobs", sampler.Params{MaxTokens: 5, Logprobs: 2, IgnoreEOS: true}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4, CacheBytes: 1 << 20})
			defer l.Close()
			first := streamAll(t, l, "the quick brown fox", c.p, c.opts...)
			before := l.Stats()
			again := streamAll(t, l, "the quick brown fox", c.p, c.opts...)
			after := l.Stats()
			if after.ComputedTokens != before.ComputedTokens || after.PromptTokens != before.PromptTokens {
				t.Errorf("the hit ran the model: computed %d → %d, prompt %d → %d",
					before.ComputedTokens, after.ComputedTokens, before.PromptTokens, after.PromptTokens)
			}
			if after.InferenceCacheHits != before.InferenceCacheHits+1 {
				t.Errorf("hits %d → %d, want one more", before.InferenceCacheHits, after.InferenceCacheHits)
			}
			if after.InferenceCacheBytes <= 0 {
				t.Errorf("cache bytes %d", after.InferenceCacheBytes)
			}
			if a, b := deltaText(first), deltaText(again); !slices.Equal(a, b) {
				t.Errorf("hit's deltas differ:\n first %q\n again %q", a, b)
			}
			last := again[len(again)-1]
			if u := last.Usage; u.CachedTokens != u.PromptTokens || u.PromptTokens == 0 {
				t.Errorf("hit's usage %+v: want the whole prompt cached", u)
			}
			for _, d := range again {
				if d.ID == first[0].ID {
					t.Errorf("hit replayed the first request's id %q", d.ID)
				}
			}
			// Generate gets the same text from the cache.
			before = l.Stats()
			res, err := l.Generate(context.Background(), []string{"the quick brown fox"}, c.p)
			if err != nil {
				t.Fatal(err)
			}
			if c.opts == nil {
				var text string
				for _, d := range first {
					text += d.TextDelta
				}
				if res[0].Text != text {
					t.Errorf("Generate %q, stream %q", res[0].Text, text)
				}
				if l.Stats().ComputedTokens != before.ComputedTokens {
					t.Error("Generate's hit ran the model")
				}
			}
			checkNoCells(t, l)
		})
	}
}

// TestInferenceCacheMisses: requests that are not deterministic or
// differ in anything that changes the output are never answered from the
// cache.
func TestInferenceCacheMisses(t *testing.T) {
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4, CacheBytes: 1 << 20})
	defer l.Close()
	seed := uint64(1)
	base := sampler.Params{MaxTokens: 4, IgnoreEOS: true}
	streamAll(t, l, "hello world", base)
	other := uint64(2)
	constraint := func() sampler.Constraint {
		return grammar.NewSchemaConstraint(grammar.JSONObjectSchema, l.vocab(), 4)
	}
	for _, c := range []struct {
		name   string
		prompt string
		p      sampler.Params
		opts   []StreamOption
	}{
		{"sampled without seed", "hello world", sampler.Params{Temperature: 1, MaxTokens: 4, IgnoreEOS: true}, nil},
		{"sampled without seed again", "hello world", sampler.Params{Temperature: 1, MaxTokens: 4, IgnoreEOS: true}, nil},
		{"other prompt", "hello there", base, nil},
		{"other max_tokens", "hello world", sampler.Params{MaxTokens: 5, IgnoreEOS: true}, nil},
		{"other stop", "hello world", sampler.Params{MaxTokens: 4, IgnoreEOS: true, Stop: []string{"x"}}, nil},
		{"seeded", "hello world", sampler.Params{Temperature: 1, Seed: &seed, MaxTokens: 4, IgnoreEOS: true}, nil},
		{"other seed", "hello world", sampler.Params{Temperature: 1, Seed: &other, MaxTokens: 4, IgnoreEOS: true}, nil},
		{"two choices", "hello world", base, []StreamOption{WithChoices(2)}},
		{"constraint without key", "hello world", sampler.Params{MaxTokens: 4, Constraint: constraint()}, nil},
		{"constraint without key again", "hello world", sampler.Params{MaxTokens: 4, Constraint: constraint()}, nil},
		{"constraint with key", "hello world", sampler.Params{MaxTokens: 4, Constraint: constraint()}, []StreamOption{WithConstraintKey("json")}},
	} {
		before := l.Stats()
		streamAll(t, l, c.prompt, c.p, c.opts...)
		after := l.Stats()
		if after.InferenceCacheHits != before.InferenceCacheHits || after.ComputedTokens == before.ComputedTokens {
			t.Errorf("%s: answered from the cache (hits %d → %d, computed %d → %d)", c.name,
				before.InferenceCacheHits, after.InferenceCacheHits, before.ComputedTokens, after.ComputedTokens)
		}
	}
	// The keyed constraint is stored; the same key hits.
	before := l.Stats()
	streamAll(t, l, "hello world", sampler.Params{MaxTokens: 4, Constraint: constraint()}, WithConstraintKey("json"))
	if l.Stats().InferenceCacheHits != before.InferenceCacheHits+1 {
		t.Error("a constraint with the same key missed")
	}
	checkNoCells(t, l)
}

// TestInferenceCacheOff: CacheBytes < 0 keeps nothing.
func TestInferenceCacheOff(t *testing.T) {
	l := openLLM(t, Options{ContextLen: 256, MaxSeqs: 4, CacheBytes: -1})
	defer l.Close()
	p := sampler.Params{MaxTokens: 3, IgnoreEOS: true}
	streamAll(t, l, "hello", p)
	before := l.Stats()
	streamAll(t, l, "hello", p)
	if st := l.Stats(); st.ComputedTokens == before.ComputedTokens || st.InferenceCacheHits != 0 || st.InferenceCacheBytes != 0 {
		t.Errorf("cache off, yet %+v", st)
	}
}

// TestInferenceCacheAbortNotStored: a request whose choices do not all
// finish well (one aborted, or an error) is not stored; one that does is.
func TestInferenceCacheAbortNotStored(t *testing.T) {
	tok := Output{ID: "r", NewTokens: []int32{5}, TextDelta: "a"}
	end := func(i int, reason string) Output {
		return Output{ID: "r", Index: i, Finished: true, FinishReason: reason}
	}
	for _, c := range []struct {
		name   string
		outs   []Output
		err    error
		stored bool
	}{
		{"finished", []Output{tok, end(0, "length"), end(1, "stop")}, nil, true},
		{"aborted", []Output{tok, end(0, "abort"), end(1, "stop")}, nil, false},
		{"aborted last", []Output{tok, end(0, "stop"), end(1, "abort")}, nil, false},
		{"failed", []Output{tok}, ErrClosed, false},
	} {
		cache := newInferenceCache(1 << 20)
		b := newMailbox(2)
		b.rec, b.cache = &recording{key: cacheKey{1}}, cache
		for _, o := range c.outs {
			b.put(o, nil)
		}
		if c.err != nil {
			b.put(Output{}, c.err)
		}
		if got := cache.get(cacheKey{1}) != nil; got != c.stored {
			t.Errorf("%s: stored %v, want %v", c.name, got, c.stored)
		}
	}
}

// TestInferenceCacheLRU: entries are evicted least recently used first
// once their bytes exceed the bound, and the bytes never exceed it.
func TestInferenceCacheLRU(t *testing.T) {
	out := func(text string) []Output {
		return []Output{{ID: "x", TextDelta: text, NewTokens: []int32{1, 2, 3}, Finished: true, FinishReason: "stop"}}
	}
	one := entryBytes(out("aaaa"))
	c := newInferenceCache(3 * one)
	key := func(i byte) cacheKey { return cacheKey{i} }
	for i := range byte(3) {
		c.put(key(i), out("aaaa"))
	}
	if _, b := c.stats(); b != 3*one {
		t.Fatalf("bytes %d, want %d", b, 3*one)
	}
	c.get(key(0)) // 1 is now the least recently used
	c.put(key(3), out("bbbb"))
	if c.get(key(1)) != nil {
		t.Error("the least recently used entry was kept")
	}
	for _, i := range []byte{0, 2, 3} {
		if c.get(key(i)) == nil {
			t.Errorf("entry %d evicted", i)
		}
	}
	if _, b := c.stats(); b > 3*one {
		t.Errorf("bytes %d above the bound %d", b, 3*one)
	}
	big := out(string(make([]byte, 4*one)))
	c.put(key(9), big)
	if c.get(key(9)) != nil {
		t.Error("an entry bigger than the bound was stored")
	}
	if _, b := c.stats(); b != 3*one {
		t.Errorf("bytes %d after refusing a big entry, want %d", b, 3*one)
	}
}

// TestDefaultCacheBytes: the default is a share of the machine's memory.
func TestDefaultCacheBytes(t *testing.T) {
	total := memTotal()
	got := defaultCacheBytes()
	if total > 0 && got != int64(float64(total)*DefaultCacheShare) {
		t.Errorf("default %d for MemTotal %d", got, total)
	}
	if got <= 0 {
		t.Errorf("default %d", got)
	}
}
