package hub

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/vkllm/vkllm/internal/hubtest"
)

// ggufRepo is a GGUF repository as the Hub holds them: several
// quantisations, a vision projector and a README.
func ggufRepo(h *hubtest.Hub, id string) map[string][]byte {
	files := map[string][]byte{
		"README.md":                          []byte("# a model\n"),
		"model-q2_k.gguf":                    hubtest.Bytes("q2_k", 3000),
		"model-q4_k_m.gguf":                  hubtest.Bytes("q4_k_m", 5000),
		"model-q8_0.gguf":                    hubtest.Bytes("q8_0", 9000),
		"mmproj-model-f16.gguf":              hubtest.Bytes("mmproj", 2000),
		"split/big-Q8_0-00001-of-00002.gguf": hubtest.Bytes("s1", 4000),
		"split/big-Q8_0-00002-of-00002.gguf": hubtest.Bytes("s2", 4100),
	}
	h.Add(id, false, files)
	return files
}

func hubClient(h *hubtest.Hub, cache string) *Client {
	return &Client{Endpoint: h.API.URL, CacheDir: cache}
}

func readPath(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPullQuant(t *testing.T) {
	h := hubtest.New(t)
	files := ggufRepo(h, "org/Model-GGUF")
	cache := t.TempDir()
	c := hubClient(h, cache)
	var last, total int64
	var calls int
	var mu sync.Mutex
	c.Progress = func(d, tot int64) { mu.Lock(); last, total = d, tot; calls++; mu.Unlock() }
	m, err := c.Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", Quant: "Q4_K_M"})
	if err != nil {
		t.Fatal(err)
	}
	if m.Kind != GGUF || !slices.Equal(m.Files, []string{"model-q4_k_m.gguf"}) {
		t.Fatalf("pulled %v %v", m.Kind, m.Files)
	}
	if got := readPath(t, m.Path); !bytes.Equal(got, files["model-q4_k_m.gguf"]) {
		t.Fatal("the pulled file differs from the Hub's")
	}
	if calls == 0 || last != 5000 || total != 5000 {
		t.Errorf("progress ended at %d/%d after %d calls, want 5000/5000", last, total, calls)
	}
	// huggingface_hub's layout: a relative link from the snapshot to the blob named by sha256, and refs/main
	repo := filepath.Join(cache, "models--org--Model-GGUF")
	link, err := os.Readlink(filepath.Join(repo, "snapshots", m.Commit, "model-q4_k_m.gguf"))
	if err != nil || link != filepath.Join("..", "..", "blobs", hubtest.SHA256(files["model-q4_k_m.gguf"])) {
		t.Errorf("snapshot link %q, %v", link, err)
	}
	if ref := string(readPath(t, filepath.Join(repo, "refs", "main"))); ref != m.Commit {
		t.Errorf("refs/main = %q, want %q", ref, m.Commit)
	}
	if n := h.Count(h.BlobGets, hubtest.SHA256(files["model-q4_k_m.gguf"])); n != 1 {
		t.Errorf("the CDN served the file %d times, want 1", n)
	}
	if len(h.CDNAuth) != 0 {
		t.Errorf("the token reached the CDN: %v", h.CDNAuth)
	}
	// a second pull asks the Hub for the file list but downloads nothing
	m2, err := c.Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", Quant: "q4_k_m"})
	if err != nil || m2.Path != m.Path {
		t.Fatalf("second pull: %v, %v", m2, err)
	}
	if n := h.Count(h.FileGets, "model-q4_k_m.gguf"); n != 1 {
		t.Errorf("second pull downloaded again: %d resolve GETs", n)
	}
}

func TestPullSplitGGUF(t *testing.T) {
	h := hubtest.New(t)
	files := ggufRepo(h, "org/Model-GGUF")
	c := hubClient(h, t.TempDir())
	c.Parallel = 2
	m, err := c.Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", Quant: "q8_0"})
	if err == nil || !errors.Is(err, ErrAmbiguous) {
		t.Fatalf("Q8_0 is both model-q8_0.gguf and the split model: got %v, %v", m, err)
	}
	m, err = c.Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", File: "split/big-Q8_0-00002-of-00002.gguf"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"split/big-Q8_0-00001-of-00002.gguf", "split/big-Q8_0-00002-of-00002.gguf"}
	if !slices.Equal(m.Files, want) || !strings.HasSuffix(m.Path, filepath.FromSlash(want[0])) {
		t.Fatalf("pulled %v at %s, want both shards, the first as the path", m.Files, m.Path)
	}
	for _, f := range want {
		if !bytes.Equal(readPath(t, filepath.Join(filepath.Dir(m.Path), filepath.Base(f))), files[f]) {
			t.Errorf("%s differs", f)
		}
	}
}

func TestPullSafetensors(t *testing.T) {
	h := hubtest.New(t)
	index := `{"metadata":{"total_size":10},"weight_map":{"a.weight":"model-00001-of-00002.safetensors","b.weight":"model-00002-of-00002.safetensors","c.weight":"model-00001-of-00002.safetensors"}}`
	files := map[string][]byte{
		"config.json":                      []byte(`{"architectures":["Qwen2ForCausalLM"]}`),
		"tokenizer.json":                   hubtest.Bytes("tok", 20000), // an LFS file
		"tokenizer_config.json":            []byte(`{}`),
		"generation_config.json":           []byte(`{}`),
		"model.safetensors.index.json":     []byte(index),
		"model-00001-of-00002.safetensors": hubtest.Bytes("w1", 3000),
		"model-00002-of-00002.safetensors": hubtest.Bytes("w2", 3000),
		"consolidated.safetensors":         hubtest.Bytes("cons", 6000),
		"original/consolidated.00.pth":     hubtest.Bytes("pth", 100),
		"onnx/model.onnx":                  hubtest.Bytes("onnx", 100),
		"README.md":                        []byte("hi"),
	}
	h.Add("org/Model", false, files)
	c := hubClient(h, t.TempDir())
	m, err := c.Pull(t.Context(), Ref{Owner: "org", Repo: "Model"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors.index.json",
		"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}
	if m.Kind != Safetensors || !slices.Equal(m.Files, want) {
		t.Fatalf("pulled %v %v, want %v", m.Kind, m.Files, want)
	}
	got, _ := snapshotFiles(m.Path)
	if len(got) != len(want) {
		t.Errorf("the snapshot holds %v", got)
	}
	for _, f := range want {
		if !bytes.Equal(readPath(t, filepath.Join(m.Path, f)), files[f]) {
			t.Errorf("%s differs", f)
		}
	}
}

// TestPullResume: a download cut mid-file leaves blobs/….incomplete; the
// next pull asks for the rest with Range and the file is whole.
func TestPullResume(t *testing.T) {
	h := hubtest.New(t)
	files := ggufRepo(h, "org/Model-GGUF")
	data := files["model-q4_k_m.gguf"]
	h.CutAt[hubtest.SHA256(data)] = 1234
	cache := t.TempDir()
	c := hubClient(h, cache)
	r := Ref{Owner: "org", Repo: "Model-GGUF", Quant: "Q4_K_M"}
	if _, err := c.Pull(t.Context(), r); err == nil || !strings.Contains(err.Error(), "resumes") {
		t.Fatalf("a cut download: %v, want an error saying a pull resumes", err)
	}
	part := filepath.Join(cache, "models--org--Model-GGUF", "blobs", hubtest.SHA256(data)+".incomplete")
	if st, err := os.Stat(part); err != nil || st.Size() != 1234 {
		t.Fatalf("after the cut: %v %v, want 1234 bytes kept", st, err)
	}
	var done, total int64
	c.Progress = func(d, t int64) { done, total = d, t }
	m, err := c.Pull(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readPath(t, m.Path), data) {
		t.Fatal("the resumed file differs")
	}
	if !slices.Equal(h.Ranges, []string{"bytes=1234-"}) {
		t.Errorf("the CDN got Range %q, want bytes=1234-", h.Ranges)
	}
	if done != total || total != int64(len(data)) {
		t.Errorf("progress %d/%d", done, total)
	}
	if _, err := os.Stat(part); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the .incomplete file is still there: %v", err)
	}
}

// TestPullNoRange: a host that ignores Range gets the whole file written
// afresh (not appended to the partial one).
func TestPullNoRange(t *testing.T) {
	h := hubtest.New(t)
	files := ggufRepo(h, "org/Model-GGUF")
	data := files["model-q4_k_m.gguf"]
	h.CutAt[hubtest.SHA256(data)] = 999
	h.NoRange = true
	c := hubClient(h, t.TempDir())
	r := Ref{Owner: "org", Repo: "Model-GGUF", Quant: "Q4_K_M"}
	c.Pull(t.Context(), r)
	m, err := c.Pull(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(readPath(t, m.Path), data) {
		t.Fatal("the file differs")
	}
}

func TestPullChecksum(t *testing.T) {
	for _, name := range []string{"model-q4_k_m.gguf", "README.md"} { // sha256 of an LFS file; git blob id of a small one
		t.Run(name, func(t *testing.T) {
			h := hubtest.New(t)
			ggufRepo(h, "org/Model-GGUF")
			h.LieSHA[name] = strings.Repeat("ab", 32)[:map[bool]int{true: 64, false: 40}[name != "README.md"]]
			cache := t.TempDir()
			c := hubClient(h, cache)
			_, err := c.Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", File: name})
			if name == "README.md" { // not a model: refused before any download; fetch it directly
				info, ierr := c.Info(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF"})
				if ierr != nil {
					t.Fatal(ierr)
				}
				err = c.fetchAll(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF"}, info, []string{name})
			}
			var ce *ChecksumError
			if !errors.As(err, &ce) || !errors.Is(err, ErrChecksum) || ce.File != name {
				t.Fatalf("got %v, want a *ChecksumError for %s", err, name)
			}
			blobs, _ := os.ReadDir(filepath.Join(cache, "models--org--Model-GGUF", "blobs"))
			if len(blobs) != 0 {
				t.Errorf("blobs left after a bad checksum: %v", blobs)
			}
			snaps, _ := os.ReadDir(filepath.Join(cache, "models--org--Model-GGUF", "snapshots"))
			if len(snaps) != 0 {
				t.Errorf("a snapshot was made: %v", snaps)
			}
		})
	}
}

// TestPullConcurrent: two pulls of one file at once (two clients, as two
// processes: the lock is a flock on a file each opens) download it once
// and both get it whole.
func TestPullConcurrent(t *testing.T) {
	h := hubtest.New(t)
	files := ggufRepo(h, "org/Model-GGUF")
	data := files["model-q4_k_m.gguf"]
	hold := make(chan struct{})
	h.HoldBlobs = hold
	cache := t.TempDir()
	r := Ref{Owner: "org", Repo: "Model-GGUF", Quant: "Q4_K_M"}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	paths := make([]string, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m, err := hubClient(h, cache).Pull(context.Background(), r)
			errs[i] = err
			if err == nil {
				paths[i] = m.Path
			}
		}()
	}
	// both have asked for the file list before the CDN answers anything
	for {
		h.Mu.Lock()
		n := h.InfoGets
		h.Mu.Unlock()
		if n == 2 {
			break
		}
	}
	close(hold)
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("pull %d: %v", i, errs[i])
		}
		if !bytes.Equal(readPath(t, paths[i]), data) {
			t.Fatalf("pull %d: the file differs", i)
		}
	}
	if n := h.Count(h.BlobGets, hubtest.SHA256(data)); n != 1 {
		t.Errorf("the CDN served the file %d times, want 1 (the second pull waits on the lock)", n)
	}
}

func TestPullOffline(t *testing.T) {
	h := hubtest.New(t)
	files := ggufRepo(h, "org/Model-GGUF")
	cache := t.TempDir()
	r := Ref{Owner: "org", Repo: "Model-GGUF", Quant: "Q4_K_M"}
	// nothing cached: offline is ErrOffline, and asks nothing
	off := hubClient(h, cache)
	off.Offline = true
	if _, err := off.Pull(t.Context(), r); !errors.Is(err, ErrOffline) {
		t.Fatalf("offline, nothing cached: %v", err)
	}
	if h.InfoGets != 0 {
		t.Fatalf("offline asked the Hub %d times", h.InfoGets)
	}
	online, err := hubClient(h, cache).Pull(t.Context(), r)
	if err != nil {
		t.Fatal(err)
	}
	h.API.Close() // the Hub is gone
	m, err := off.Pull(t.Context(), r)
	if err != nil || m.Path != online.Path || !bytes.Equal(readPath(t, m.Path), files["model-q4_k_m.gguf"]) {
		t.Fatalf("offline pull: %v, %v", m, err)
	}
	// another quantisation is not cached
	if _, err := off.Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", Quant: "Q8_0"}); !errors.Is(err, ErrNoMatch) {
		t.Errorf("an uncached quant offline: %v", err)
	}
	// online but unreachable: the cache answers, as huggingface_hub does
	if m, err := hubClient(h, cache).Pull(t.Context(), r); err != nil || m.Path != online.Path {
		t.Errorf("unreachable Hub: %v, %v", m, err)
	}
	if _, err := hubClient(h, cache).Pull(t.Context(), Ref{Owner: "org", Repo: "Other"}); err == nil || !isUnreachable(err) {
		t.Errorf("unreachable Hub, nothing cached: %v", err)
	}
}

func TestPullGated(t *testing.T) {
	h := hubtest.New(t)
	h.Token = "hf_right"
	files := map[string][]byte{"model-Q4_K_M.gguf": hubtest.Bytes("gated", 4000)}
	h.Add("meta-llama/Llama-3.2-1B-GGUF", true, files)
	r := Ref{Owner: "meta-llama", Repo: "Llama-3.2-1B-GGUF"}
	c := hubClient(h, t.TempDir())
	for _, tc := range []struct {
		token  string
		status int
		hint   string
	}{{"", 401, "set HF_TOKEN"}, {"hf_wrong", 403, "check that HF_TOKEN"}} {
		c.Token = tc.token
		_, err := c.Pull(t.Context(), r)
		var ae *AccessError
		if !errors.As(err, &ae) || ae.Status != tc.status {
			t.Fatalf("token %q: %v, want an *AccessError %d", tc.token, err, tc.status)
		}
		msg := err.Error()
		for _, want := range []string{"meta-llama/Llama-3.2-1B-GGUF", h.API.URL + "/meta-llama/Llama-3.2-1B-GGUF", "accept its licence", tc.hint} {
			if !strings.Contains(msg, want) {
				t.Errorf("%q lacks %q", msg, want)
			}
		}
	}
	c.Token = "hf_right"
	m, err := c.Pull(t.Context(), r)
	if err != nil || !bytes.Equal(readPath(t, m.Path), files["model-Q4_K_M.gguf"]) {
		t.Fatalf("with the token: %v, %v", m, err)
	}
	if len(h.CDNAuth) != 0 {
		t.Errorf("the token reached the CDN host: %v", h.CDNAuth)
	}
}

func TestPullNotFound(t *testing.T) {
	h := hubtest.New(t)
	ggufRepo(h, "org/Model-GGUF")
	c := hubClient(h, t.TempDir())
	c.Token = "hf_x"
	for _, r := range []Ref{
		{Owner: "org", Repo: "Model-GGUF", Revision: "nope"},
		{Owner: "org", Repo: "Nope"},
	} {
		if _, err := c.Pull(t.Context(), r); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", r, err)
		}
	}
	for _, r := range []Ref{
		{Owner: "org", Repo: "Model-GGUF", File: "nope.gguf"},
		{Owner: "org", Repo: "Model-GGUF", Quant: "Q5_K_S"},
	} {
		_, err := c.Pull(t.Context(), r)
		if !errors.Is(err, ErrNoMatch) {
			t.Errorf("%s: %v, want ErrNoMatch", r, err)
		}
		if r.Quant != "" && !strings.Contains(err.Error(), "Q4_K_M") {
			t.Errorf("%v does not list the quants there are", err)
		}
	}
	// no token: the Hub answers 401 RepoNotFound, which may be a private repo
	c.Token = ""
	var ae *AccessError
	if _, err := c.Pull(t.Context(), Ref{Owner: "org", Repo: "Nope"}); !errors.As(err, &ae) {
		t.Errorf("no token, unknown repo: %v", err)
	}
}

// TestPullNoSpace: a download larger than the disk's free space is refused
// before a byte is fetched.
func TestPullNoSpace(t *testing.T) {
	if diskFree(t.TempDir()) < 0 {
		t.Skip("free space is unknown on this system")
	}
	h := hubtest.New(t)
	ggufRepo(h, "org/Model-GGUF")
	h.LieSize["model-q4_k_m.gguf"] = 1 << 60
	c := hubClient(h, t.TempDir())
	_, err := c.Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", Quant: "Q4_K_M"})
	var se *SpaceError
	if !errors.As(err, &se) || !errors.Is(err, ErrNoSpace) || se.Need != 1<<60 {
		t.Fatalf("got %v, want a *SpaceError", err)
	}
	if n := h.Count(h.FileGets, "model-q4_k_m.gguf"); n != 0 {
		t.Errorf("%d downloads started", n)
	}
}

// TestHFCacheLayout: a cache laid out as huggingface_hub documents it
// (blobs named by digest, snapshot links, refs/main) is used as it is:
// nothing is downloaded.
func TestHFCacheLayout(t *testing.T) {
	h := hubtest.New(t)
	files := ggufRepo(h, "org/Model-GGUF")
	repo := h.Repos["org/Model-GGUF"]
	cache := t.TempDir()
	dir := filepath.Join(cache, "models--org--Model-GGUF")
	data := files["model-q4_k_m.gguf"]
	os.MkdirAll(filepath.Join(dir, "blobs"), 0o755)
	os.MkdirAll(filepath.Join(dir, "refs"), 0o755)
	os.MkdirAll(filepath.Join(dir, "snapshots", repo.Commit), 0o755)
	os.WriteFile(filepath.Join(dir, "blobs", hubtest.SHA256(data)), data, 0o644)
	os.WriteFile(filepath.Join(dir, "refs", "main"), []byte(repo.Commit), 0o644)
	if err := os.Symlink("../../blobs/"+hubtest.SHA256(data), filepath.Join(dir, "snapshots", repo.Commit, "model-q4_k_m.gguf")); err != nil {
		t.Skip("no symlinks here:", err)
	}
	p, err := Resolve(t.Context(), "hf://org/Model-GGUF:Q4_K_M", hubClient(h, cache))
	if err != nil {
		t.Fatal(err)
	}
	if p != filepath.Join(dir, "snapshots", repo.Commit, "model-q4_k_m.gguf") {
		t.Errorf("path %s", p)
	}
	if n := h.Count(h.FileGets, "model-q4_k_m.gguf"); n != 0 {
		t.Errorf("%d downloads of a cached file", n)
	}
}

func TestListRemove(t *testing.T) {
	h := hubtest.New(t)
	files := ggufRepo(h, "org/Model-GGUF")
	cache := t.TempDir()
	c := hubClient(h, cache)
	for _, q := range []string{"Q4_K_M", "Q2_K"} {
		if _, err := c.Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", Quant: q}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := List(cache)
	if err != nil || len(list) != 1 {
		t.Fatalf("List: %v, %v", list, err)
	}
	l := list[0]
	if l.Repo != "org/Model-GGUF" || l.Size != 8000 || len(l.Snapshots) != 1 || len(l.Snapshots[0].Files) != 2 || !slices.Equal(l.Snapshots[0].Refs, []string{"main"}) {
		t.Errorf("List: %+v", l)
	}
	freed, err := Remove(t.Context(), cache, Ref{Owner: "org", Repo: "Model-GGUF", Quant: "q2_k"})
	if err != nil || freed != int64(len(files["model-q2_k.gguf"])) {
		t.Fatalf("Remove Q2_K: freed %d, %v", freed, err)
	}
	if list, _ := List(cache); list[0].Size != 5000 || len(list[0].Snapshots[0].Files) != 1 {
		t.Errorf("after removing Q2_K: %+v", list[0])
	}
	freed, err = Remove(t.Context(), cache, Ref{Owner: "org", Repo: "Model-GGUF"})
	if err != nil || freed != 5000 {
		t.Fatalf("Remove: freed %d, %v", freed, err)
	}
	if _, err := os.Stat(filepath.Join(cache, "models--org--Model-GGUF")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the repository folder is left: %v", err)
	}
	if _, err := Remove(t.Context(), cache, Ref{Owner: "org", Repo: "Model-GGUF"}); !errors.Is(err, ErrOffline) {
		t.Errorf("removing what is not there: %v", err)
	}
}

func TestFromEnv(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HF_HOME", home)
	t.Setenv("HF_TOKEN", "")
	t.Setenv("HF_TOKEN_PATH", "")
	t.Setenv("HUGGING_FACE_HUB_TOKEN", "")
	t.Setenv("HF_HUB_CACHE", "")
	t.Setenv("HUGGINGFACE_HUB_CACHE", "")
	t.Setenv("HF_ENDPOINT", "https://mirror.example/")
	t.Setenv("HF_HUB_OFFLINE", "1")
	os.WriteFile(filepath.Join(home, "token"), []byte("hf_fromfile\n"), 0o600)
	c := FromEnv()
	if c.Endpoint != "https://mirror.example" || c.Token != "hf_fromfile" || c.CacheDir != filepath.Join(home, "hub") || !c.Offline {
		t.Errorf("FromEnv: %+v", c)
	}
	t.Setenv("HF_TOKEN", "hf_env")
	t.Setenv("HF_HUB_CACHE", "/elsewhere")
	t.Setenv("HF_HUB_OFFLINE", "0")
	c = FromEnv()
	if c.Token != "hf_env" || c.CacheDir != "/elsewhere" || c.Offline {
		t.Errorf("FromEnv: %+v", c)
	}
}

// TestPullCancel: cancelling a pull mid-file (Ctrl-C) returns the
// context's error and keeps the bytes so far for the next pull.
func TestPullCancel(t *testing.T) {
	h := hubtest.New(t)
	data := hubtest.Bytes("big", 8<<20)
	h.Add("org/Model-GGUF", false, map[string][]byte{"model-q4_k_m.gguf": data})
	cache := t.TempDir()
	c := hubClient(h, cache)
	ctx, cancel := context.WithCancel(t.Context())
	c.Progress = func(done, total int64) {
		if done > 0 {
			cancel()
		}
	}
	r := Ref{Owner: "org", Repo: "Model-GGUF", Quant: "Q4_K_M"}
	if _, err := c.Pull(ctx, r); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled pull: %v", err)
	}
	st, err := os.Stat(filepath.Join(cache, "models--org--Model-GGUF", "blobs", hubtest.SHA256(data)+".incomplete"))
	if err != nil || st.Size() == 0 || st.Size() == int64(len(data)) {
		t.Fatalf("after the cancel: %v, %v; want part of the file kept", st, err)
	}
	c.Progress = nil
	m, err := c.Pull(t.Context(), r)
	if err != nil || !bytes.Equal(readPath(t, m.Path), data) {
		t.Fatalf("the pull after: %v", err)
	}
	if want := fmt.Sprintf("bytes=%d-", st.Size()); !slices.Equal(h.Ranges, []string{want}) {
		t.Errorf("Range %v, want %s", h.Ranges, want)
	}
}

func TestResolveLocal(t *testing.T) {
	for _, p := range []string{"model.gguf", "/models/qwen2", "hf.co/x/y"} {
		if got, err := Resolve(t.Context(), p, &Client{}); got != p || err != nil {
			t.Errorf("Resolve(%q) = %q, %v; want it unchanged", p, got, err)
		}
	}
	var ne *NameError
	if _, err := Resolve(t.Context(), "hf://x", &Client{}); !errors.As(err, &ne) {
		t.Errorf("a malformed name: %v", err)
	}
}
