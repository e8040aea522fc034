package kv

import (
	"fmt"
	"testing"
)

// BenchmarkDecodeStep: one decode step of nSeq sequences (one token each)
// into a cache already holding their prompts: Prepare, Apply, Visible over
// UsedMax, as models.Context.Decode does.
func BenchmarkDecodeStep(b *testing.B) {
	for _, tc := range []struct{ cells, seqs, prompt int }{{4096, 1, 2048}, {4096, 16, 200}, {32768, 64, 400}} {
		b.Run(fmt.Sprintf("cells=%d/seqs=%d", tc.cells, tc.seqs), func(b *testing.B) {
			c, _ := New(tc.cells, tc.seqs)
			for s := range tc.seqs {
				pb := Batch{}
				for p := range tc.prompt {
					pb.Pos = append(pb.Pos, Pos(p))
					pb.Seq = append(pb.Seq, []SeqID{SeqID(s)})
				}
				slot, err := c.Prepare(pb)
				if err != nil {
					b.Fatal(err)
				}
				c.Apply(slot)
			}
			step := Batch{}
			for s := range tc.seqs {
				step.Pos = append(step.Pos, Pos(tc.prompt))
				step.Seq = append(step.Seq, []SeqID{SeqID(s)})
			}
			var vis []int32
			for b.Loop() {
				slot, err := c.Prepare(step)
				if err != nil {
					b.Fatal(err)
				}
				c.Apply(slot)
				var err2 error
				if vis, _, err2 = c.Visible(step, vis); err2 != nil {
					b.Fatal(err2)
				}
				c.Rollback(slot)
			}
		})
	}
}

// BenchmarkSeqRm: removing the tail of one sequence among many.
func BenchmarkSeqRm(b *testing.B) {
	c, _ := New(32768, 64)
	for s := range 64 {
		pb := Batch{}
		for p := range 500 {
			pb.Pos = append(pb.Pos, Pos(p))
			pb.Seq = append(pb.Seq, []SeqID{SeqID(s)})
		}
		slot, _ := c.Prepare(pb)
		c.Apply(slot)
	}
	for b.Loop() {
		c.SeqRm(7, 400, -1)
		c.SeqCp(8, 7, 400, -1) // refill so every iteration removes 100
	}
}
