package vulkan

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/kernels/vulkan/shaders"
)

// TestPushSizes: each Go push-constant struct has the byte size of the
// block its shaders declare.
func TestPushSizes(t *testing.T) {
	mirror := map[string]any{
		"add_rms_norm_": pcNorm{}, "rope_kv_": pcRoPEKV{}, // the fused ops
		"get_rows_": pcRows{}, "matmul_": pcMatMul{}, "add_": pcBinary{}, "swiglu_": pcBinary{},
		"rms_norm_": pcNorm{}, "rope_": pcRoPE{}, "kv_shift_": pcRoPE{}, "kv_write_": pcKVWrite{},
		"attention_": pcAttention{}, "attention_combine_": pcCombine{}, "attention_prefill_": pcPrefill{},
		"quantize_q8_": pcQ8{}, "probe_read": pcProbeRead{},
	}
	for _, v := range shaders.Variants {
		var pc any
		best := ""
		name := v.Name
		if strings.HasPrefix(name, "probe_") && strings.Contains(name, "_matmul_") { // the probe's matmul.comp ablations
			name = name[strings.Index(name, "matmul_"):]
		}
		for prefix, s := range mirror {
			if strings.HasPrefix(name, prefix) && len(prefix) > len(best) {
				pc, best = s, prefix
			}
		}
		if pc == nil {
			t.Errorf("%s: no Go push-constant struct", v.Name)
			continue
		}
		l, err := shaders.Reflect(v.Name)
		if err != nil {
			t.Fatal(err)
		}
		if got := binary.Size(pc); got != l.PushSize {
			t.Errorf("%s: Go %T is %d bytes, the shader's block %d", v.Name, pc, got, l.PushSize)
		}
	}
}
