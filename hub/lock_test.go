package hub

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vkllm/vkllm/internal/hubtest"
)

// pulledBlob pulls org/Model-GGUF:Q4_K_M from a stand-in Hub into a new
// cache and returns the client, the model and its blob's name and path.
func pulledBlob(t *testing.T) (c *Client, files map[string][]byte, m *Model, blob, blobPath string) {
	t.Helper()
	h := hubtest.New(t)
	files = ggufRepo(h, "org/Model-GGUF")
	c = hubClient(h, t.TempDir())
	m, err := c.Pull(t.Context(), Ref{Owner: "org", Repo: "Model-GGUF", Quant: "Q4_K_M"})
	if err != nil {
		t.Fatal(err)
	}
	target, err := os.Readlink(m.Path)
	if err != nil {
		t.Fatal(err)
	}
	blob = filepath.Base(target)
	return c, files, m, blob, filepath.Join(repoDir(c.CacheDir, m.Ref), "blobs", blob)
}

// TestRemoveTakesBlobLocks: a pull holds a blob's lock from before it
// writes the blob until it has linked it into the snapshot. Remove of the
// same model meanwhile (`vkllm rm` beside `vkllm pull`) must not delete
// the blob, written but not linked yet: it waits for the lock, sees the
// link, and keeps the file.
func TestRemoveTakesBlobLocks(t *testing.T) {
	c, files, m, blob, blobPath := pulledBlob(t)
	unlock, err := lockFile(t.Context(), lockPath(c.CacheDir, m.Ref, blob))
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(m.Path) // the pull has written the blob and not linked it yet
	done := make(chan error, 1)
	go func() {
		_, err := Remove(t.Context(), c.CacheDir, Ref{Owner: "org", Repo: "Model-GGUF"})
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Remove returned (%v) while a pull held the blob's lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := os.Stat(blobPath); err != nil {
		t.Fatalf("Remove deleted a blob a pull held the lock of: %v", err)
	}
	// The pull links the blob and lets go; Remove then keeps it.
	if err := link(filepath.Dir(m.Path), filepath.Base(m.Path), blobPath); err != nil {
		t.Fatal(err)
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := readPath(t, m.Path); string(got) != string(files["model-q4_k_m.gguf"]) {
		t.Fatal("the pulled file differs after Remove")
	}
}

// TestPullLinksUnderLock: a pull links a blob only under its lock, even a
// blob already in the cache, so that a Remove holding the lock (deleting
// the blob, no snapshot linking to it) cannot leave a link to nothing.
func TestPullLinksUnderLock(t *testing.T) {
	c, files, m, blob, _ := pulledBlob(t)
	os.Remove(m.Path) // the blob is in the cache, linked by no snapshot
	unlock, err := lockFile(t.Context(), lockPath(c.CacheDir, m.Ref, blob))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Pull(t.Context(), m.Ref)
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("Pull returned (%v) while another process held the blob's lock", err)
	case <-time.After(300 * time.Millisecond):
	}
	if _, err := os.Lstat(m.Path); err == nil {
		t.Fatal("Pull linked the blob without its lock")
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := readPath(t, m.Path); string(got) != string(files["model-q4_k_m.gguf"]) {
		t.Fatal("the pulled file differs")
	}
}
