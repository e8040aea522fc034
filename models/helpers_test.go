package models

import "slices"

// prefill appends tokens to seq after its last position, in Decodes of
// at most BatchSize tokens, and returns a copy of the last token's
// logits. On an error the chunks before the failed one stay decoded.
func prefill(ctx *Context, seq SeqID, tokens []int32) ([]float32, error) {
	pos := ctx.SeqPosMax(seq) + 1
	var b Batch
	for start := 0; start < len(tokens); start += ctx.Params().BatchSize {
		end := min(start+ctx.Params().BatchSize, len(tokens))
		b = Batch{}
		for i := start; i < end; i++ {
			b.Add(tokens[i], pos+int32(i), i == len(tokens)-1, seq)
		}
		if err := ctx.Decode(b); err != nil {
			return nil, err
		}
	}
	return slices.Clone(ctx.Logits(b.Len() - 1)), nil
}

// decodeToken appends one token to seq and returns a copy of its logits.
func decodeToken(ctx *Context, seq SeqID, token int32) ([]float32, error) {
	return prefill(ctx, seq, []int32{token})
}

// decodeBatch appends one token to each of seqs in one Decode and
// returns copies of their logits, in order.
func decodeBatch(ctx *Context, seqs []SeqID, tokens []int32) ([][]float32, error) {
	var b Batch
	for i, s := range seqs {
		b.Add(tokens[i], ctx.SeqPosMax(s)+1, true, s)
	}
	if err := ctx.Decode(b); err != nil {
		return nil, err
	}
	out := make([][]float32, len(seqs))
	for i := range seqs {
		out[i] = slices.Clone(ctx.Logits(i))
	}
	return out, nil
}
