// The LLM's speculation: the draft model or draft source of Options
// opened, checked against the model's vocabulary, and closed with the LLM.

package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/tokenizer"
)

// draftModel is what an LLM opened for speculation: the Speculation, and
// the draft model's Context and model to close with the LLM (the model
// only when the LLM opened it).
type draftModel struct {
	spec *Speculation
	ctx  *models.Context
	own  *models.Model
}

// openDraft makes the Speculation of opts for model m (tokenizer tok) and
// its Context of parameters cp: nil without opts.Draft and
// opts.DraftModel.
func openDraft(m *models.Model, tok *tokenizer.Tokenizer, cp models.ContextParams, opts Options) (*draftModel, error) {
	d := &draftModel{}
	sources := 0
	for _, set := range []bool{opts.Draft != "", opts.DraftModel != nil, opts.DraftProposer != nil} {
		if set {
			sources++
		}
	}
	switch {
	case sources > 1:
		return nil, errcode.Wrap(errcode.BadParams, errors.New("engine: more than one of Options.Draft, DraftModel and DraftProposer set"))
	case opts.DraftProposer != nil:
		d.spec = &Speculation{Proposer: opts.DraftProposer, Max: opts.DraftMax}
		return d, nil
	case opts.Draft == "ngram":
		d.spec = &Speculation{Proposer: NGram{}, Max: opts.DraftMax}
		return d, nil
	case sources == 0:
		return d, nil
	}
	dm := opts.DraftModel
	if dm == nil {
		var err error
		if dm, err = models.Open(context.Background(), opts.Draft, models.WithBackend(m.Backend())); err != nil {
			return nil, fmt.Errorf("engine: draft model: %w", err)
		}
		d.own = dm
	}
	if err := sameVocab(m, tok, dm); err != nil {
		d.close()
		return nil, err
	}
	ctx, err := dm.NewContext(models.ContextParams{ContextLen: min(cp.ContextLen, opts.MaxSeqs*dm.Config.MaxPositions),
		MaxSeqs: opts.MaxSeqs, BatchSize: cp.BatchSize, KVType: cp.KVType})
	if err != nil {
		d.close()
		return nil, fmt.Errorf("engine: draft model: %w", err)
	}
	d.ctx = ctx
	d.spec = &Speculation{Draft: dm, DraftContext: ctx, Max: opts.DraftMax}
	return d, nil
}

// sameVocab checks that the draft model dm has the vocabulary of m, whose
// tokenizer is tok: the same size and, when both have a tokenizer, the
// same bytes for every token.
func sameVocab(m *models.Model, tok *tokenizer.Tokenizer, dm *models.Model) error {
	if a, b := m.Config.VocabSize, dm.Config.VocabSize; a != b {
		return fmt.Errorf("%w: %d tokens, the model has %d", ErrDraftVocab, b, a)
	}
	dt, err := modelTokenizer(dm)
	if err != nil || tok == nil {
		return err
	}
	pa, pb := tok.Pieces(), dt.Pieces()
	if len(pa) != len(pb) {
		return fmt.Errorf("%w: its tokenizer has %d tokens, the model's %d", ErrDraftVocab, len(pb), len(pa))
	}
	for i := range pa {
		if !bytes.Equal(pa[i], pb[i]) {
			return fmt.Errorf("%w: token %d is %q, the model's %q", ErrDraftVocab, i, pb[i], pa[i])
		}
	}
	return nil
}

// modelTokenizer loads the tokenizer of an open model.
func modelTokenizer(m *models.Model) (*tokenizer.Tokenizer, error) {
	if g := m.Files.GGUF; g != nil {
		return tokenizer.FromGGUF(g)
	}
	return tokenizer.FromFile(m.Files.TokenizerPath)
}

// close frees the draft Context and the model the LLM opened. A nil d
// does nothing.
func (d *draftModel) close() {
	if d == nil {
		return
	}
	if d.ctx != nil {
		d.ctx.Close()
	}
	if d.own != nil {
		d.own.Close()
	}
}
