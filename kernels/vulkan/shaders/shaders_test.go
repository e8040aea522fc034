package shaders

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSPIRVFresh recompiles every variant and fails when a committed .spv
// differs: run `go generate ./kernels/vulkan/shaders` after editing a
// shader. It skips only when glslc is not installed, and the
// cooperative-matrix and integer-dot variants when VKLLM_GLSLC is not set.
func TestSPIRVFresh(t *testing.T) {
	if _, err := exec.LookPath("glslc"); err != nil {
		t.Skip("glslc not installed (tools/install-deps.sh installs it)")
	}
	dir := t.TempDir()
	for _, v := range Variants {
		t.Run(v.Name, func(t *testing.T) {
			t.Parallel()
			out := filepath.Join(dir, v.Name+".spv")
			if (v.Coop || v.IntDot) && os.Getenv("VKLLM_GLSLC") == "" {
				t.Skip("needs a glslc with GL_KHR_cooperative_matrix and GL_EXT_integer_dot_product in VKLLM_GLSLC (tools/lavapipe-coopmat.sh; make test sets it)")
			}
			if msg, err := exec.Command(Glslc(v), GlslcArgs(v, out)...).CombinedOutput(); err != nil {
				t.Fatalf("glslc: %v\n%s", err, msg)
			}
			fresh, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			committed, err := SPIRV(v.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(fresh, committed) {
				t.Errorf("spv/%s.spv is stale: run go generate ./kernels/vulkan/shaders", v.Name)
			}
		})
	}
}

// TestNoOrphans: every .spv belongs to a variant.
func TestNoOrphans(t *testing.T) {
	known := map[string]bool{}
	for _, v := range Variants {
		known[v.Name+".spv"] = true
	}
	ents, err := spv.ReadDir("spv")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "README" && !known[e.Name()] {
			t.Errorf("spv/%s has no variant", e.Name())
		}
	}
}

// TestReflect: every variant has bindings and a push-constant block.
func TestReflect(t *testing.T) {
	for _, v := range Variants {
		l, err := Reflect(v.Name)
		if err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if l.Bindings == 0 || l.PushSize == 0 {
			t.Errorf("%s: %+v", v.Name, l)
		}
		// Every shader writes exactly its outputs: one, but the fused
		// ops' (add_rms_norm: the sum and the norm; rope_kv: q, k and the
		// two caches).
		want := 1
		switch {
		case strings.HasPrefix(v.Name, "add_rms_norm_"):
			want = 2
		case strings.HasPrefix(v.Name, "rope_kv_"):
			want = 4
		}
		if n := countTrue(l.Writable); n != want {
			t.Errorf("%s: writable bindings %v, want %d", v.Name, l.Writable, want)
		}
	}
}

func countTrue(b []bool) int {
	n := 0
	for _, v := range b {
		if v {
			n++
		}
	}
	return n
}
