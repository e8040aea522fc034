package hub

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vkllm/vkllm/internal/hubtest"
)

// hfPython runs tools/hf_hub_cache.py with the real huggingface_hub
// package, or skips the test where Python or the package is missing.
func hfPython(t *testing.T, env []string, args ...string) string {
	t.Helper()
	if err := exec.Command("python3", "-c", "import huggingface_hub").Run(); err != nil {
		t.Skip("python3 with huggingface_hub is not installed (pip install huggingface_hub):", err)
	}
	cmd := exec.Command("python3", append([]string{"../tools/hf_hub_cache.py"}, args...)...)
	cmd.Env = append(os.Environ(), "HF_TOKEN=", "HF_HUB_DISABLE_TELEMETRY=1", "HF_HUB_DISABLE_XET=1")
	cmd.Env = append(cmd.Env, env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("hf_hub_cache.py %v: %v\n%s", args, err, errb.String())
	}
	return out.String()
}

// TestHuggingfaceHubInterop: a file huggingface_hub downloaded (from the
// stand-in Hub) is used without a download, and one pulled here is found
// by huggingface_hub offline, at the same path with the same bytes.
func TestHuggingfaceHubInterop(t *testing.T) {
	h := hubtest.New(t)
	files := ggufRepo(h, "org/Model-GGUF")
	cache := t.TempDir()
	env := []string{"HF_ENDPOINT=" + h.API.URL, "HF_HUB_CACHE=" + cache, "HF_HUB_OFFLINE=0"}

	// huggingface_hub writes, vkllm reads
	out := hfPython(t, env, "download", "org/Model-GGUF", "model-q4_k_m.gguf")
	if n := h.Count(h.FileGets, "model-q4_k_m.gguf"); n == 0 {
		t.Fatalf("huggingface_hub did not download through the stand-in: %s", out)
	}
	before := h.Count(h.BlobGets, hubtest.SHA256(files["model-q4_k_m.gguf"]))
	m, err := hubClient(h, cache).Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", Quant: "Q4_K_M"})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(out)[0]; got != m.Path {
		t.Errorf("huggingface_hub's path %s, ours %s", got, m.Path)
	}
	if n := h.Count(h.BlobGets, hubtest.SHA256(files["model-q4_k_m.gguf"])); n != before {
		t.Errorf("the file huggingface_hub cached was downloaded again")
	}

	// vkllm writes, huggingface_hub reads offline
	m, err = hubClient(h, cache).Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", File: "model-q8_0.gguf"})
	if err != nil {
		t.Fatal(err)
	}
	h.API.Close()
	out = hfPython(t, []string{"HF_HUB_CACHE=" + cache, "HF_HUB_OFFLINE=1"}, "read", "org/Model-GGUF", "model-q8_0.gguf")
	want := fmt.Sprintf("%s %s\n", m.Path, hubtest.SHA256(files["model-q8_0.gguf"]))
	if out != want {
		t.Errorf("huggingface_hub read %q, want %q", out, want)
	}
	if filepath.Dir(m.Path) != filepath.Join(cache, "models--org--Model-GGUF", "snapshots", m.Commit) {
		t.Errorf("path %s", m.Path)
	}
}
