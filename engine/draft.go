package engine

import (
	"errors"
	"fmt"

	"github.com/vkllm/vkllm/kv"
	"github.com/vkllm/vkllm/models"
	"github.com/vkllm/vkllm/sampler"
)

// modelDrafter drafts with a second, smaller model on its own Context.
// Each running request that has drafted holds a sequence there with the
// tokens it has fed (toks, at positions 0..); before drafting, the cells
// past what the request's tokens still share with toks are removed (the
// drafts the target rejected) and the rest of its tokens are fed (catch
// up), then one draft token per request is decoded per batch.
type modelDrafter struct {
	ctx     *models.Context
	maxPos  int // the draft model's positions
	seqs    map[*sequence]*draftSeq
	free    []int32 // unused sequence ids of ctx
	batch   models.Batch
	pending []feed
}

// draftSeq is what the draft Context holds of one request.
type draftSeq struct {
	id   int32
	toks []int32          // tokens whose K/V are in the draft Context, at positions 0..
	samp *sampler.Sampler // draws the drafts at temperature > 0
}

// feed is a request's tokens still to decode in the draft Context, from
// toks[len(ds.toks)].
type feed struct {
	q   *sequence
	ds  *draftSeq
	src []int32 // the tokens to feed (the request's tokens, then its drafts)
	at  int     // how many of src are fed
}

func newModelDrafter(ctx *models.Context, maxPos int) *modelDrafter {
	d := &modelDrafter{ctx: ctx, maxPos: maxPos, seqs: map[*sequence]*draftSeq{}}
	for id := ctx.Params().MaxSeqs - 1; id >= 0; id-- {
		d.free = append(d.free, int32(id))
	}
	return d
}

// draft fills q.spec.draft (whose length is the drafts wanted) for each q
// of want, with the draft model's tokens, or empties it when the draft
// Context cannot take them. running is every running request: the
// sequences of the others are freed. A full draft Context is not an
// error: the requests draft nothing this step and their sequences start
// over.
func (d *modelDrafter) draft(running, want []*sequence) error {
	live := make(map[*sequence]bool, len(running))
	for _, q := range running {
		live[q] = true
	}
	for q, ds := range d.seqs {
		if !live[q] || q.seqID < 0 {
			if err := d.drop(q, ds); err != nil {
				return err
			}
		}
	}
	d.pending = d.pending[:0]
	for _, q := range want {
		if len(q.tokens)+len(q.spec.draft) > d.maxPos {
			q.spec.draft = q.spec.draft[:0]
			continue
		}
		q.spec.dists = q.spec.dists[:0]
		ds := d.seqs[q]
		if ds == nil {
			if len(d.free) == 0 {
				q.spec.draft = q.spec.draft[:0]
				continue
			}
			ds = &draftSeq{id: d.free[len(d.free)-1]}
			d.free = d.free[:len(d.free)-1]
			d.seqs[q] = ds
			if p := q.post.params; p.Temperature > 0 {
				seed := uint64(0x5eed)
				if p.Seed != nil {
					seed ^= *p.Seed
				} else {
					seed ^= uint64(len(d.seqs)) << 32 // any draw will do: q's own draws are random
				}
				ds.samp = sampler.New(sampler.Params{Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP, MinP: p.MinP, Seed: &seed}, nil)
			}
		}
		c := commonPrefix(ds.toks, q.tokens[:len(q.tokens)-1])
		if c < len(ds.toks) {
			if err := d.ctx.SeqRm(models.SeqID(ds.id), int32(c), -1); err != nil {
				return fmt.Errorf("engine: draft: %w", err)
			}
			ds.toks = ds.toks[:c]
		}
		d.pending = append(d.pending, feed{q: q, ds: ds, src: q.tokens[c:]})
	}
	// Round j decodes each request's tokens not yet fed and draws its
	// draft j: round 0 the catch-up, then the previous draft.
	for j := 0; len(d.pending) > 0; j++ {
		if err := d.round(j); err != nil {
			if errors.Is(err, kv.ErrNoSlot) {
				return d.reset(want)
			}
			return err
		}
		n := 0
		for _, f := range d.pending {
			if len(f.q.spec.draft) > j+1 {
				f.src, f.at = f.q.spec.draft[j:j+1], 0
				d.pending[n] = f
				n++
			}
		}
		d.pending = d.pending[:n]
	}
	return nil
}

// round feeds every pending request's tokens, in as many Decodes as the
// batch size needs, and draws draft j of each from the logits of its
// last token.
func (d *modelDrafter) round(j int) error {
	size := d.ctx.Params().BatchSize
	type part struct{ f, from, n int } // pending[f] fed src[from:from+n] in this batch
	var parts []part
	for i := 0; i < len(d.pending); {
		b := &d.batch
		b.Token, b.Pos, b.Seq, b.Logits = b.Token[:0], b.Pos[:0], b.Seq[:0], b.Logits[:0]
		parts = parts[:0]
		for i < len(d.pending) && b.Len() < size {
			f := &d.pending[i]
			n := min(len(f.src)-f.at, size-b.Len())
			for k := f.at; k < f.at+n; k++ {
				b.Add(f.src[k], int32(len(f.ds.toks)+k-f.at), k == len(f.src)-1, models.SeqID(f.ds.id))
			}
			parts = append(parts, part{i, f.at, n})
			if f.at += n; f.at == len(f.src) {
				i++
			}
		}
		if err := d.ctx.Decode(*b); err != nil {
			return fmt.Errorf("engine: draft: %w", err)
		}
		row := 0
		for _, pt := range parts {
			f := &d.pending[pt.f]
			f.ds.toks = append(f.ds.toks, f.src[pt.from:pt.from+pt.n]...)
			row += pt.n
			if pt.from+pt.n == len(f.src) {
				d.pick(f, j, d.ctx.Logits(row-1))
			}
		}
	}
	return nil
}

// pick draws draft j of f's request from the draft model's logits row.
func (d *modelDrafter) pick(f *feed, j int, row []float32) {
	sp := &f.q.spec
	if f.ds.samp == nil {
		sp.draft[j] = argmax32(row)
		return
	}
	if j < cap(sp.dists) {
		sp.dists = sp.dists[:j+1]
	} else {
		sp.dists = append(sp.dists, nil)
	}
	sp.dists[j] = f.ds.samp.Dist(row, sp.dists[j])
	sp.draft[j] = f.ds.samp.Choose(sp.dists[j])
}

// reset frees every draft sequence and empties the drafts of want.
func (d *modelDrafter) reset(want []*sequence) error {
	for q, ds := range d.seqs {
		if err := d.drop(q, ds); err != nil {
			return err
		}
	}
	for _, q := range want {
		q.spec.draft = q.spec.draft[:0]
	}
	d.pending = d.pending[:0]
	return nil
}

func (d *modelDrafter) drop(q *sequence, ds *draftSeq) error {
	if err := d.ctx.SeqRm(models.SeqID(ds.id), -1, -1); err != nil {
		return fmt.Errorf("engine: draft: %w", err)
	}
	d.free = append(d.free, ds.id)
	delete(d.seqs, q)
	return nil
}

// argmax32 is the first largest entry of row.
func argmax32(row []float32) int32 {
	best := 0
	for i, v := range row {
		if v > row[best] {
			best = i
		}
	}
	return int32(best)
}
