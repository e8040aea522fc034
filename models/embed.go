package models

import (
	"slices"

	"github.com/vkllm/vkllm/kernels"
)

// readHidden copies x, the pass's (n, hidden) final hidden states after
// the final norm, to the host when a token of bt asks for its own
// (Batch.Embed), and records which did. A pass that asks for none reads
// nothing.
func (ctx *Context) readHidden(bt Batch, x kernels.Tensor) error {
	ctx.embRow = ctx.embRow[:0]
	if !slices.Contains(bt.Embed, true) {
		return nil
	}
	need := len(bt.Token) * ctx.m.Config.HiddenSize
	if cap(ctx.hidden) < need {
		ctx.hidden = make([]float32, need)
	}
	ctx.hidden = ctx.hidden[:need]
	if err := ctx.m.backend.GetF32(x, ctx.hidden); err != nil {
		return err
	}
	ctx.embRow = append(ctx.embRow, bt.Embed...)
	return nil
}

// Embeddings returns the final hidden state (after the final norm, the
// row the output head multiplies) of batch index i of the last Decode,
// or nil if that token did not ask for it (Batch.Embed). The slice is
// the context's and valid until the next Decode.
func (ctx *Context) Embeddings(i int) []float32 {
	if i < 0 || i >= len(ctx.embRow) || !ctx.embRow[i] {
		return nil
	}
	d := ctx.m.Config.HiddenSize
	return ctx.hidden[i*d : (i+1)*d : (i+1)*d]
}
