//go:build cgo

package models

import (
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/kernels/vulkan"
)

// TestVulkanReplay: greedy generation with the Vulkan backend replaying
// decode steps (kernels.Replayer) gives every logit bitwise as without
// replay, for 1, 3 and 8 sequences of different lengths whose lists
// grow past 64, 128 and 192 cells (the chunk, and the segment count
// going from 1 to 4; a width of exactly 64 after prompts that left
// larger lists on the host), and most steps are replayed. A replay that ran on stale
// inputs (positions, cells, lists or token ids of the step it was
// recorded in) gives other logits.
func TestVulkanReplay(t *testing.T) {
	on := openVulkanConfig(t, vulkan.Config{})
	off := openVulkanConfig(t, vulkan.Config{NoReplay: true})
	if !on.Device().Replay || off.Device().Replay {
		t.Fatalf("DeviceInfo.Replay: %v with replay, %v without", on.Device().Replay, off.Device().Replay)
	}
	path := filepath.Join(testdata, "qwen2-tiny")
	mOn, mOff := openOn(t, path, on), openOn(t, path, off)
	vocab := int32(mOn.Config.VocabSize)
	for _, seqs := range []int{1, 3, 8} {
		t.Run(fmt.Sprintf("%d sequences", seqs), func(t *testing.T) {
			p := ContextParams{ContextLen: seqs * 200, MaxSeqs: seqs, BatchSize: 128}
			cOn, cOff := newCtx(t, mOn, p), newCtx(t, mOff, p)
			var tok, pos []int32
			step := func(what string, bt Batch) {
				t.Helper()
				if err := cOff.Decode(bt); err != nil {
					t.Fatalf("%s: without replay: %v", what, err)
				}
				if err := cOn.Decode(bt); err != nil {
					t.Fatalf("%s: with replay: %v", what, err)
				}
				for i := range bt.Token {
					if !bt.Logits[i] {
						continue
					}
					want, got := cOff.Logits(i), cOn.Logits(i)
					for j := range want {
						if math.Float32bits(got[j]) != math.Float32bits(want[j]) {
							t.Fatalf("%s: batch index %d (sequence %d, position %d): logit %d is %v with replay, %v without",
								what, i, bt.Seq[i][0], bt.Pos[i], j, got[j], want[j])
						}
					}
					s := bt.Seq[i][0]
					tok[s], pos[s] = argmax(want), bt.Pos[i]+1
				}
			}
			// Prompts of 50 + s tokens, a batch each.
			for s := range seqs {
				var bt Batch
				n := 50 + s
				for i := range n {
					bt.Add(int32(s*31+i*7)%vocab, int32(i), i == n-1, SeqID(s))
				}
				tok, pos = append(tok, 0), append(pos, 0)
				step(fmt.Sprintf("prompt %d", s), bt)
			}
			r0 := on.Replayed()
			const steps = 140
			for k := range steps {
				var bt Batch
				for s := range seqs {
					bt.Add(tok[s], pos[s], true, SeqID(s))
				}
				step(fmt.Sprintf("decode step %d", k), bt)
			}
			// A new recording at each 64 cells of the longest list (and
			// the first): the rest replay.
			if got := on.Replayed() - r0; got < steps-8 {
				t.Errorf("%d of %d decode steps replayed", got, steps)
			}
			if off.Replayed() != 0 {
				t.Errorf("%d steps replayed with replay off", off.Replayed())
			}
		})
	}
}
