package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/sampler"
)

// ErrDimensions: EmbedOptions.Dimensions asks for a length other than the
// model's. Shortening an embedding keeps its meaning only for a model
// trained for it (Matryoshka), and no model here declares that.
var ErrDimensions = errcode.New(errcode.BadParams, "engine: the model does not support other embedding dimensions")

// EmbedOptions tune LLM.Embed. Zero values take the defaults.
type EmbedOptions struct {
	// Pooling is PoolLast or PoolMean; PoolDefault takes the model's
	// (LLM.EmbedConfig).
	Pooling Pooling
	// NoNormalize leaves the pooled vector as it is; by default it is
	// scaled to unit L2 norm.
	NoNormalize bool
	// Dimensions is 0 or the model's vector length (EmbedConfig.Size);
	// any other is refused with ErrDimensions.
	Dimensions int
}

// Embedding is one input's vector.
type Embedding struct {
	Vector       []float32 // EmbedConfig.Size values
	PromptTokens int       // the input's tokens
	CachedTokens int       // of those, found in the prefix cache (last-token pooling only)
}

// embedConfig is read once, the first time it is needed.
type embedConfig struct {
	once sync.Once
	c    EmbedConfig
	err  error
}

// EmbedConfig is the model's embedding configuration: its pooling, vector
// length and the most tokens of an input. A model file that is there but malformed is an error.
func (l *LLM) EmbedConfig() (EmbedConfig, error) {
	l.embedCfg.once.Do(func() {
		l.embedCfg.c, l.embedCfg.err = readEmbedConfig(l.model)
		l.embedCfg.c.MaxTokens = l.maxLen
	})
	return l.embedCfg.c, l.embedCfg.err
}

// Embed computes the embedding of each input, in order: the final hidden
// states (after the model's final norm) of its tokens, encoded with the
// special tokens the tokenizer adds, pooled and, by default, normalised.
// The inputs run as requests beside any generation, batched into the
// same steps (at most Options.MaxSeqs of them queued at once, so a long
// list never fills the queue), and each frees its cells when its last
// token is computed. Bad input fails the call before anything runs: an
// empty input wraps sampler.ErrEmptyPrompt, a long one ErrPromptTooLong,
// a bad option ErrDimensions, ErrPooling or ErrBadEmbed. Cancelling ctx
// aborts the inputs still running and returns ctx's error.
func (l *LLM) Embed(ctx context.Context, inputs []string, opts EmbedOptions) ([]Embedding, error) {
	if l.tok == nil {
		return nil, fmt.Errorf("%w: embed token ids with EmbedTokens", ErrNoTokenizer)
	}
	for i, s := range inputs { // every input's bytes before any is tokenised
		if err := l.checkBytes(len(s)); err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
	}
	toks := make([][]int32, len(inputs))
	for i, s := range inputs {
		t, err := l.encode(s, true, nil) // stops past the context
		if err != nil {
			return nil, fmt.Errorf("input %d: %w", i, err)
		}
		toks[i] = t
	}
	return l.EmbedTokens(ctx, toks, opts)
}

// EmbedTokens is Embed for inputs given as token ids (out-of-vocabulary
// ids wrap ErrBadToken).
func (l *LLM) EmbedTokens(ctx context.Context, inputs [][]int32, opts EmbedOptions) ([]Embedding, error) {
	if ctx == nil {
		return nil, ErrNilContext
	}
	p, err := l.embedParams(opts)
	if err != nil {
		return nil, err
	}
	vocab := int32(l.model.Config.VocabSize)
	for i, in := range inputs {
		switch {
		case len(in) == 0:
			return nil, fmt.Errorf("input %d: %w", i, errcode.Wrap(errcode.EmptyPrompt, sampler.ErrEmptyPrompt))
		case len(in) > l.maxLen:
			return nil, fmt.Errorf("input %d: %w", i, promptTooLong(len(in), l.maxLen))
		}
		for j, t := range in {
			if t < 0 || t >= vocab {
				return nil, fmt.Errorf("input %d: %w: %d at %d (vocabulary %d)", i, ErrBadToken, t, j, vocab)
			}
		}
	}
	return l.embed(ctx, inputs, p)
}

// embedParams resolves opts against the model's configuration.
func (l *LLM) embedParams(opts EmbedOptions) (EmbedParams, error) {
	p := EmbedParams{Pooling: opts.Pooling, Normalize: !opts.NoNormalize}
	if p.Pooling >= numPoolings {
		return p, fmt.Errorf("%w: pooling %v", ErrBadEmbed, p.Pooling)
	}
	c, err := l.EmbedConfig()
	if err != nil {
		return p, err
	}
	if opts.Dimensions != 0 && opts.Dimensions != c.Size {
		return p, fmt.Errorf("%w: %d asked, the model's embeddings have %d", ErrDimensions, opts.Dimensions, c.Size)
	}
	if p.Pooling == PoolDefault {
		if c.Err != nil {
			return p, c.Err
		}
		p.Pooling = c.Pooling
	}
	return p, nil
}

// embed runs the inputs as embedding requests, at most Options.MaxSeqs
// queued at a time, and gathers their vectors in order.
func (l *LLM) embed(ctx context.Context, inputs [][]int32, p EmbedParams) ([]Embedding, error) {
	type flight struct {
		i   int
		id  string
		box *mailbox
	}
	res := make([]Embedding, len(inputs))
	window := max(1, min(l.opts.MaxSeqs, l.opts.MaxPending))
	signal := make(chan struct{}, 1) // every box's: one wait covers them all
	var running []flight
	fail := func(err error) ([]Embedding, error) {
		ids := make([]string, len(running))
		for i, f := range running {
			ids[i] = f.id
		}
		l.abort(ids...)
		return nil, err
	}
	next := 0
	for next < len(inputs) || len(running) > 0 {
		var cmds []command
		for ; next < len(inputs) && len(running) < window; next++ {
			f := flight{i: next, id: l.newID(), box: newMailbox(1)}
			f.box.signal = signal
			cmds = append(cmds, command{req: &Request{ID: f.id, Prompt: inputs[next], Embed: &p}, box: f.box})
			running = append(running, f)
		}
		if len(cmds) > 0 {
			if err := l.send(cmds...); err != nil {
				running = running[:len(running)-len(cmds)]
				return fail(err)
			}
		}
		done := 0
		for k := 0; k < len(running); k++ {
			f := running[k]
			outs, err, fin := f.box.take()
			if err != nil {
				return fail(fmt.Errorf("input %d: %w", f.i, err))
			}
			for _, o := range outs {
				if o.Finished {
					if o.Embedding == nil {
						return fail(fmt.Errorf("engine: input %d ended (%s) without an embedding", f.i, o.FinishReason))
					}
					res[f.i] = Embedding{Vector: o.Embedding, PromptTokens: o.Usage.PromptTokens, CachedTokens: o.Usage.CachedTokens}
				}
			}
			if fin {
				running = append(running[:k], running[k+1:]...)
				k--
				done++
			}
		}
		if done > 0 && next < len(inputs) {
			continue // room for more: queue them before waiting
		}
		if len(running) == 0 {
			continue
		}
		select {
		case <-signal:
		case <-ctx.Done():
			return fail(ctx.Err())
		}
	}
	return res, nil
}
