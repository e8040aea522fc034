package benchcmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/sampler"
	"github.com/vkllm/vkllm/tokenizer/chat"
)

// SpecResult is what --draft measures: the same greedy chat request run
// with and without speculative decoding, alternated.
type SpecResult struct {
	Model    string  `json:"model"`
	Backend  string  `json:"backend"`
	Draft    string  `json:"draft"`
	DraftMax int     `json:"draft_max"`
	Reps     int     `json:"reps"`
	Prompt   int     `json:"prompt_tokens"`
	Tokens   int     `json:"tokens"`
	PlainTPS float64 `json:"plain_decode_tps"` // median over the reps
	DraftTPS float64 `json:"draft_decode_tps"` // median over the reps
	Speedup  float64 `json:"speedup"`          // DraftTPS / PlainTPS
	// Acceptance is the fraction of draft tokens kept, over every rep.
	Acceptance float64   `json:"acceptance"`
	PlainRuns  []float64 `json:"plain_runs"`
	DraftRuns  []float64 `json:"draft_runs"`
	// CacheHits counts the runs answered from an inference cache: 0, or
	// the rates time replays.
	CacheHits uint64 `json:"inference_cache_hits"`
	// The process's CPU time per generated token (prompt included), in
	// µs, medians: a busy machine disturbs it less than wall time.
	PlainCPUUS float64 `json:"plain_cpu_us_per_token"`
	DraftCPUUS float64 `json:"draft_cpu_us_per_token"`
}

// specText is the text the task repeats: about 300 tokens.
const specText = `The lighthouse stood at the end of a narrow spit of rock, where the land gave up and the sea began. ` +
	`For more than a hundred years its keepers had climbed the one hundred and twelve steps each evening to light the lamp, ` +
	`and each morning they climbed them again to put it out. The work was simple but it could not be missed: a single dark night ` +
	`could send a fishing boat onto the reef that lay hidden just below the surface at high tide. The last keeper, a quiet man ` +
	`named Thomas Hale, kept a log of every night he spent in the tower. He wrote down the weather, the ships that passed, the ` +
	`birds that rested on the gallery rail, and sometimes a line or two about the books he was reading. When the light was ` +
	`finally automated, the log ran to forty-one volumes. They are kept now in the small museum in the harbour town, where ` +
	`visitors can read, in his careful handwriting, that on the night of the great storm of 1953 the waves reached the lantern ` +
	`room itself, and that he kept the lamp burning until dawn with a hand pump and a bucket. The town still remembers him. ` +
	`Every year, on the anniversary of the storm, the children walk out along the spit at dusk carrying paper lanterns, and ` +
	`for a few minutes the old tower is lit again, not by its lamp but by a line of small lights moving slowly over the rocks.`

// missProposer drafts a token the model never writes in the task (a
// chat turn's start), so that every draft is rejected: the cost of a
// draft source that keeps missing.
type missProposer struct{ tok int32 }

func (p missProposer) Propose(_ []int32, k int) []int32 {
	d := make([]int32, k)
	for i := range d {
		d[i] = p.tok
	}
	return d
}

// benchSpec runs the task of rewriting text reps times with draft (ngram,
// miss or a draft model's path) and without, alternated, and reports the
// medians.
func benchSpec(path, backend string, threads int, draft string, draftMax, tg, reps int, text string, progress io.Writer) (*SpecResult, error) {
	// No prefix cache and no inference cache: every run computes its
	// whole answer (the warm-up's would otherwise be replayed).
	base := engine.Options{Backend: backend, Threads: threads, MaxSeqs: 1, NoPrefixCache: true, CacheBytes: -1}
	plain, err := engine.Open(context.Background(), path, base)
	if err != nil {
		return nil, err
	}
	defer plain.Close()
	opts := base
	opts.DraftMax = draftMax
	if draft == "miss" {
		var tok int32
		ok := false
		if t := plain.Tokenizer(); t != nil {
			tok, ok = t.TokenID("<|im_start|>")
		}
		if !ok {
			return nil, fmt.Errorf("--draft miss: the model has no <|im_start|> token")
		}
		opts.DraftProposer = missProposer{tok}
	} else {
		opts.Draft = draft
	}
	spec, err := engine.Open(context.Background(), path, opts)
	if err != nil {
		return nil, err
	}
	defer spec.Close()
	req := engine.ChatRequest{Messages: []chat.Message{{Role: "user", Content: "Rewrite the following text exactly:\n\n" + text}}}
	p := sampler.Params{MaxTokens: tg, IgnoreEOS: true}
	res := &SpecResult{Model: path, Backend: plain.Model().Backend().Name(), Draft: draft, DraftMax: draftMax, Reps: reps}
	// one returns the decode rate of one run: the tokens after the first
	// over the time from the first to the last.
	var cpuUS float64 // the last run's
	one := func(l *engine.LLM) (float64, error) {
		var first, last time.Time
		n := 0
		c0 := cpuTime()
		for d, err := range l.StreamChat(context.Background(), req, p) {
			if err != nil {
				return 0, err
			}
			if n == 0 {
				first = time.Now()
			}
			n += len(d.NewTokens)
			last = time.Now()
			if d.Finished {
				res.Prompt, res.Tokens = d.Usage.PromptTokens, d.Usage.CompletionTokens
			}
		}
		if n < 2 {
			return 0, fmt.Errorf("the request gave %d tokens", n)
		}
		cpuUS = float64((cpuTime() - c0).Microseconds()) / float64(n)
		return float64(n-1) / last.Sub(first).Seconds(), nil
	}
	if _, err := one(plain); err != nil { // warm up both
		return nil, err
	}
	if _, err := one(spec); err != nil {
		return nil, err
	}
	before := spec.Stats()
	var cpuA, cpuB []float64
	for i := range reps {
		a, err := one(plain)
		if err != nil {
			return nil, err
		}
		ca := cpuUS
		b, err := one(spec)
		if err != nil {
			return nil, err
		}
		res.PlainRuns, res.DraftRuns = append(res.PlainRuns, a), append(res.DraftRuns, b)
		cpuA, cpuB = append(cpuA, ca), append(cpuB, cpuUS)
		fmt.Fprintf(progress, "rep %d: plain %.2f tok/s (%.0f µs CPU a token), %s %.2f tok/s (%.0f µs)\n", i+1, a, ca, draft, b, cpuUS)
	}
	res.PlainCPUUS, res.DraftCPUUS = median(cpuA), median(cpuB)
	st := spec.Stats()
	res.CacheHits = plain.Stats().InferenceCacheHits + st.InferenceCacheHits
	if n := st.DraftTokens - before.DraftTokens; n > 0 {
		res.Acceptance = float64(st.DraftAccepted-before.DraftAccepted) / float64(n)
	}
	res.PlainTPS, res.DraftTPS = median(res.PlainRuns), median(res.DraftRuns)
	res.Speedup = res.DraftTPS / res.PlainTPS
	return res, nil
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func printSpec(w io.Writer, r *SpecResult) {
	fmt.Fprintf(w, "%s on %s, rewrite task (%d prompt tokens, %d generated, greedy), %d reps alternated:\n",
		r.Model, r.Backend, r.Prompt, r.Tokens, r.Reps)
	fmt.Fprintf(w, "plain decode %.2f tok/s, --draft %s (max %d) %.2f tok/s (medians): speedup %.2f×, %.0f%% of drafts kept\n",
		r.PlainTPS, r.Draft, r.DraftMax, r.DraftTPS, r.Speedup, 100*r.Acceptance)
	if r.PlainCPUUS > 0 {
		fmt.Fprintf(w, "process CPU time a token (medians): plain %.0f µs, --draft %s %.0f µs (%.2f×)\n",
			r.PlainCPUUS, r.Draft, r.DraftCPUUS, r.DraftCPUUS/r.PlainCPUUS)
	}
}
