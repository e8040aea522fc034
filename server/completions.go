package server

import (
	"context"
	"encoding/json"
	"iter"
	"net/http"
	"time"

	"github.com/vkllm/vkllm/engine"
	"github.com/vkllm/vkllm/sampler"
)

// MaxPrompts bounds the prompts of one /v1/completions request; prompts × n
// is at most MaxN too.
const MaxPrompts = 16

type completionLogprobs struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs"`
	TextOffset    []int                `json:"text_offset"`
}

type completionChoice struct {
	Index        int                 `json:"index"`
	Text         string              `json:"text"`
	Logprobs     *completionLogprobs `json:"logprobs"`
	FinishReason *string             `json:"finish_reason"`
}

type completionResponse = reply[completionChoice]

// prompt is one prompt of a completions request: text or token ids.
type prompt struct {
	text string
	ids  []int32
}

// parsePrompts reads "prompt": a string, an array of strings, an array of
// token ids, or an array of arrays of token ids.
func parsePrompts(raw json.RawMessage) ([]prompt, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, badParam("prompt", "prompt is required")
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []prompt{{text: one}}, nil
	}
	var texts []string
	if json.Unmarshal(raw, &texts) == nil && len(texts) > 0 {
		out := make([]prompt, len(texts))
		for i, t := range texts {
			out[i] = prompt{text: t}
		}
		return out, nil
	}
	var ids []int32
	if json.Unmarshal(raw, &ids) == nil && len(ids) > 0 {
		return []prompt{{ids: ids}}, nil
	}
	var lists [][]int32
	if json.Unmarshal(raw, &lists) == nil && len(lists) > 0 {
		out := make([]prompt, len(lists))
		for i, l := range lists {
			out[i] = prompt{ids: l}
		}
		return out, nil
	}
	return nil, badParam("prompt", "prompt must be a non-empty string, array of strings, array of token ids or array of arrays of token ids")
}

// maxPending is the requests m's generator queues at once (each prompt
// of a completion is one).
func maxPending(m *Model) int { return m.Gen.MaxPending() }

func (s *Server) handleCompletions(w http.ResponseWriter, r *http.Request, body []byte) {
	var req completionRequest
	if e := decodeBody(body, &req); e != nil {
		writeError(w, e)
		return
	}
	m, label, adapter, e := s.resolve(req.Model)
	if e != nil {
		writeError(w, e)
		return
	}
	s.note(r, req.Model, req.Prompt)
	prompts, e := parsePrompts(req.Prompt)
	if e != nil {
		writeError(w, e)
		return
	}
	p, n, e := req.params()
	if e != nil {
		writeError(w, e)
		return
	}
	switch {
	case len(prompts) > MaxPrompts || len(prompts)*n > MaxN:
		e = badParam("prompt", "at most %d choices (prompts × n) per request, got %d × %d", MaxN, len(prompts), n)
	case len(prompts) > maxPending(m):
		e = badParam("prompt", "%d prompts are more than the %d requests the server queues at once", len(prompts), maxPending(m))
	case req.Echo && req.Logprobs != nil:
		e = badParam("echo", "echo with logprobs is not supported (it needs the prompt's logprobs)")
	case req.Suffix != nil && *req.Suffix != "":
		e = badParam("suffix", "suffix is not supported")
	case req.BestOf != nil && *req.BestOf != n:
		e = badParam("best_of", "best_of is not supported (only best_of = n)")
	case req.Logprobs != nil && (*req.Logprobs < 0 || *req.Logprobs > 20):
		e = badParam("logprobs", "logprobs must be in [0, 20], got %d", *req.Logprobs)
	}
	if e != nil {
		writeError(w, e)
		return
	}
	top := 0
	if req.Logprobs != nil {
		top = *req.Logprobs
		p.Logprobs = max(top, 1)
	}
	tok := m.Gen.Tokenizer()
	if err := p.Validate(tok.VocabSize()); err != nil {
		writeError(w, engineError(err, "prompt", s.cfg.Logf))
		return
	}
	// echo puts each prompt before its choices' text, as vLLM's: the
	// text given, or the text of the token ids given.
	echo := make([]string, len(prompts))
	for k, pr := range prompts {
		switch {
		case !req.Echo:
		case pr.ids != nil:
			text, err := m.Gen.Detokenize(pr.ids)
			if err != nil {
				writeError(w, engineError(err, "prompt", s.cfg.Logf))
				return
			}
			echo[k] = text
		default:
			echo[k] = pr.text
		}
	}
	total := len(prompts) * n
	streams := make([]func(context.Context) iter.Seq2[engine.Delta, error], len(prompts)) // one per prompt, of n choices
	for k, pr := range prompts {
		streams[k] = func(ctx context.Context) iter.Seq2[engine.Delta, error] {
			opts := []engine.StreamOption{engine.WithChoices(n), engine.WithAdapter(adapter), s.cacheScope(r)}
			if rf := req.ResponseFormat.engine(); rf != nil {
				opts = append(opts, engine.WithResponseFormat(*rf))
			}
			if pr.ids != nil {
				return m.Gen.StreamTokens(ctx, pr.ids, p, opts...)
			}
			if pr.text == "" {
				return func(yield func(engine.Delta, error) bool) { yield(engine.Delta{}, sampler.ErrEmptyPrompt) }
			}
			return m.Gen.Stream(ctx, pr.text, p, opts...)
		}
	}
	ctx := r.Context()
	run := s.startRun(ctx, streams, n)
	defer run.stop()
	first, ok := run.started(ctx, w, "prompt")
	if !ok {
		return
	}
	mm := s.metrics.model(label)
	id, created := newID("cmpl-"), time.Now().Unix()
	choices := make([]choiceState, total)
	use := func() usage {
		var u usage
		for i, ch := range choices {
			if i%n == 0 {
				u.PromptTokens += ch.usage.PromptTokens
			}
			u.CompletionTokens += ch.usage.CompletionTokens
		}
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
		return u
	}
	lps := func(l []engine.TokenLogprob, offset int) *completionLogprobs {
		if req.Logprobs == nil {
			return nil
		}
		out := &completionLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []map[string]float64{}, TextOffset: []int{}}
		for _, lp := range l {
			t, _ := tokenText(tok, lp.ID)
			out.Tokens = append(out.Tokens, t)
			out.TokenLogprobs = append(out.TokenLogprobs, lp.Logprob)
			tops := map[string]float64{}
			for _, x := range lp.Top[:min(len(lp.Top), top)] {
				xt, _ := tokenText(tok, x.ID)
				tops[xt] = x.Logprob
			}
			out.TopLogprobs = append(out.TopLogprobs, tops)
			out.TextOffset = append(out.TextOffset, offset)
			offset += len(t)
		}
		return out
	}
	if req.Stream {
		out := newSSE(w, run.timeout)
		offsets := make([]int, total)
		echoed := make([]bool, total)
		handle := func(ev event) error {
			ch := &choices[ev.i]
			ch.add(ev.d, time.Now(), mm, run.start)
			c := completionChoice{Index: ev.i, Text: ev.d.TextDelta, Logprobs: lps(ev.d.Logprobs, offsets[ev.i])}
			if !echoed[ev.i] {
				echoed[ev.i] = true
				c.Text = echo[ev.i/n] + c.Text
			}
			if c.Logprobs != nil {
				for _, t := range c.Logprobs.Tokens {
					offsets[ev.i] += len(t)
				}
			}
			if ch.finished {
				reason := ch.reason
				c.FinishReason = &reason
			}
			return out.send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: req.Model, Choices: []completionChoice{c}})
		}
		if !run.pump(ctx, out, first, choices, "prompt", handle) {
			return
		}
		if req.StreamOptions != nil && req.StreamOptions.IncludeUsage {
			u := use()
			if out.send(completionResponse{ID: id, Object: "text_completion", Created: created, Model: req.Model,
				Choices: []completionChoice{}, Usage: &u}) != nil {
				return
			}
		}
		out.done()
		return
	}
	if err := run.collect(ctx, first, choices, mm); err != nil {
		if ctx.Err() == nil {
			writeError(w, engineError(err, "prompt", s.cfg.Logf))
		}
		return
	}
	u := use()
	resp := completionResponse{ID: id, Object: "text_completion", Created: created, Model: req.Model, Usage: &u}
	for i := range choices {
		ch := &choices[i]
		reason := ch.reason
		resp.Choices = append(resp.Choices, completionChoice{Index: i, Text: echo[i/n] + string(ch.text), Logprobs: lps(ch.logprobs, 0), FinishReason: &reason})
	}
	writeJSON(w, http.StatusOK, resp)
}
