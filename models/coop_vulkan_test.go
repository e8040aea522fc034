//go:build cgo

package models

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/vkllm/vkllm/kernels/vulkan"
)

// TestVulkanCoopMat: with the cooperative-matrix MatMul on
// (vulkan.Config.CoopMat: every MatMul of the model on the matrix cores,
// decode steps included), a token's logits are bitwise the same in a
// batch of four prompts as alone, in decode steps of four sequences as
// alone, and with a prompt decoded in chunks of 1, 4 and 6 tokens as at
// once. It also measures the distance from the transformers goldens
// (fp16 inputs: not held to TestVulkanParity's 1e-4 of the largest
// logit; see kernels/vulkan/coop.go) and fails above 1e-2.
//
// It needs a device with VK_KHR_cooperative_matrix (make test runs it on
// tools/lavapipe-coopmat.sh's lavapipe with VKLLM_REQUIRE_COOPMAT=1,
// where a device without it fails); elsewhere it is skipped.
func TestVulkanCoopMat(t *testing.T) {
	b := openVulkanConfig(t, vulkan.Config{CoopMat: true})
	if d := b.Device(); !d.CoopMat {
		msg := "device without the cooperative-matrix kernel (tools/lavapipe-coopmat.sh provides one)"
		if os.Getenv("VKLLM_REQUIRE_COOPMAT") == "1" {
			t.Fatalf("%s: %+v", msg, d)
		}
		t.Skipf("%s: %+v", msg, d)
	}
	for _, model := range []string{"qwen2-tiny", "qwen2-tiny-Q4_0.gguf", "llama-tiny-Q4_1.gguf"} {
		t.Run(model, func(t *testing.T) {
			m := openOn(t, filepath.Join(testdata, model), b)
			batchVsAlone(t, m, func(got, alone []float32, seq, pos int) {
				if !bitwiseEqual(got, alone) {
					j, d, _ := farLogit(got, alone, 0)
					t.Fatalf("seq %d pos %d: batched logits differ from alone (token %d by %.3g)", seq, pos, j, d)
				}
			})
			p := prompts[2]
			whole := decodeAlone(t, m, p, 0)
			ctx := newCtx(t, m, ContextParams{ContextLen: 64, BatchSize: 64})
			pos := 0
			for _, c := range []int{1, 4, 6} {
				var bt Batch
				for i := pos; i < pos+c; i++ {
					bt.Add(p[i], int32(i), true, 0)
				}
				if err := ctx.Decode(bt); err != nil {
					t.Fatal(err)
				}
				for i := pos; i < pos+c; i++ {
					if !bitwiseEqual(ctx.Logits(i-pos), whole[i]) {
						t.Fatalf("pos %d in a chunk of %d: logits differ from the prompt at once", i, c)
					}
				}
				pos += c
			}
		})
	}
	for _, c := range parityCases {
		t.Run("parity "+c.path, func(t *testing.T) {
			m := openOn(t, filepath.Join(testdata, c.path), b)
			g := loadGolden(t, c.golden)
			worst := 0.0
			for _, p := range g.Prompts {
				got := decodeAlone(t, m, p.Tokens, 0)
				for i := range p.Tokens {
					var scale, d float64
					for j, v := range p.Logits[i] {
						scale = math.Max(scale, math.Abs(float64(v)))
						d = math.Max(d, math.Abs(float64(got[i][j]-v)))
					}
					worst = math.Max(worst, d/scale)
				}
			}
			t.Logf("%s: largest |logit − golden| / largest |golden logit| = %.3g", c.path, worst)
			if worst > 1e-2 {
				t.Errorf("%s: %.3g of the largest logit from the golden (> 1e-2)", c.path, worst)
			}
		})
	}
}
