package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// progress adds up the bytes of all a pull's files.
type progress struct {
	done, total atomic.Int64
	report      func(done, total int64)
}

func (p *progress) add(n int64) {
	d := p.done.Add(n)
	if p.report != nil {
		p.report(d, p.total.Load())
	}
}

// fetchAll brings the files of info named in names into the cache and
// links them into the snapshot of its commit, several at once, after
// checking the disk has room for what is missing.
func (c *Client) fetchAll(ctx context.Context, r Ref, info *Info, names []string) error {
	dir := repoDir(c.CacheDir, r)
	blobs := filepath.Join(dir, "blobs")
	snap := filepath.Join(dir, "snapshots", info.Commit)
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	byName := map[string]File{}
	for _, f := range info.Files {
		byName[f.Name] = f
	}
	var todo []File
	counted := map[string]int64{} // bytes of each file already counted done
	var need int64
	p := &progress{report: c.Progress}
	for _, n := range names {
		f, ok := byName[n]
		if !ok {
			return fmt.Errorf("%w: %s@%s has no file %s", ErrNotFound, r.RepoID(), info.Commit, n)
		}
		if f.blob() == "" {
			return fmt.Errorf("hub: %s: the model info gives %s no digest (blobId or lfs.sha256)", r.RepoID(), n)
		}
		todo = append(todo, f)
		p.total.Add(f.Size)
		bp := filepath.Join(blobs, f.blob())
		if _, err := os.Stat(bp); err == nil {
			p.done.Add(f.Size)
			counted[f.Name] = f.Size
			continue
		}
		have := int64(0)
		if st, err := os.Stat(bp + ".incomplete"); err == nil && st.Size() <= f.Size {
			have = st.Size()
		}
		p.done.Add(have)
		counted[f.Name] = have
		need += f.Size - have
	}
	if free := diskFree(blobs); free >= 0 && need > free {
		return &SpaceError{Dir: blobs, Need: need, Free: free}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	par := c.Parallel
	if par <= 0 {
		par = 4
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for _, f := range todo {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := c.fetch(ctx, r, info.Commit, snap, f, p, counted[f.Name]); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	return first // the first failure; the others are its cancellation
}

// fetch brings one file's blob into the cache and links it into the
// snapshot folder snap, all under the blob's lock (as huggingface_hub
// does; Remove takes the same lock before it deletes a blob no snapshot
// links to, so it never deletes one between its download and its link):
// resuming blobs/BLOB.incomplete with a Range request, checking the
// digest, then renaming it into place. A blob already there is kept.
// counted is the bytes of it p already counts as done.
func (c *Client) fetch(ctx context.Context, r Ref, commit, snap string, f File, p *progress, counted int64) error {
	bp := filepath.Join(repoDir(c.CacheDir, r), "blobs", f.blob())
	lp := lockPath(c.CacheDir, r, f.blob())
	if err := os.MkdirAll(filepath.Dir(lp), 0o755); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	unlock, err := lockFile(ctx, lp)
	if err != nil {
		return fmt.Errorf("hub: locking %s: %w", lp, err)
	}
	defer unlock()
	if _, err := os.Stat(bp); err == nil { // there already, or another process finished it while we waited
		p.add(f.Size - counted)
		return link(snap, f.Name, bp)
	}
	part := bp + ".incomplete"
	out, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	defer out.Close()
	h, algo, want := digest(f)
	have, err := out.Seek(0, io.SeekEnd)
	if err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	p.add(have - counted) // another process may have written more meanwhile
	if have > f.Size {    // not ours to resume
		if err := out.Truncate(0); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
		p.add(-have)
		have = 0
	}
	if have > 0 { // the bytes already there enter the digest
		if _, err := out.Seek(0, io.SeekStart); err != nil {
			return fmt.Errorf("hub: %w", err)
		}
		if _, err := io.CopyN(h, out, have); err != nil {
			return fmt.Errorf("hub: reading %s: %w", part, err)
		}
	}
	if have < f.Size {
		if err := c.download(ctx, r, commit, f, out, h, have, p); err != nil {
			return err
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		out.Close()
		os.Remove(part)
		return &ChecksumError{Repo: r.RepoID(), File: f.Name, Algo: algo, Want: want, Got: got}
	}
	if err := out.Sync(); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	if err := os.Rename(part, bp); err != nil {
		return fmt.Errorf("hub: %w", err)
	}
	return link(snap, f.Name, bp)
}

// digest is the hash a file is checked with, its name and the value the
// Hub lists: SHA-256 for an LFS file, else the git blob id (SHA-1 of
// "blob SIZE\x00" and the bytes).
func digest(f File) (hash.Hash, string, string) {
	if f.SHA256 != "" {
		return sha256.New(), "sha256", f.SHA256
	}
	h := sha1.New()
	fmt.Fprintf(h, "blob %d\x00", f.Size)
	return h, "git-sha1", f.GitOID
}

// download appends the file's bytes from offset have to out (positioned at
// its end), through GET {Endpoint}/{REPO}/resolve/{COMMIT}/{FILE} and its
// redirects. A server that ignores the Range gets its whole answer
// written from the start.
func (c *Client) download(ctx context.Context, r Ref, commit string, f File, out *os.File, h hash.Hash, have int64, p *progress) error {
	u := c.endpoint() + "/" + r.RepoID() + "/resolve/" + commit + "/" + escapePath(f.Name)
	rng := ""
	if have > 0 {
		rng = "bytes=" + strconv.FormatInt(have, 10) + "-"
	}
	resp, err := c.get(ctx, r, u, rng)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if have > 0 {
		start, ok := rangeStart(resp)
		if !ok || start != have { // the whole file (200), or a range we did not ask for
			if resp.StatusCode == http.StatusPartialContent {
				return fmt.Errorf("hub: %s: asked for bytes from %d, got %q", u, have, resp.Header.Get("Content-Range"))
			}
			p.add(-have)
			h.Reset()
			if f.SHA256 == "" {
				fmt.Fprintf(h, "blob %d\x00", f.Size)
			}
			if err := out.Truncate(0); err != nil {
				return fmt.Errorf("hub: %w", err)
			}
			if _, err := out.Seek(0, io.SeekStart); err != nil {
				return fmt.Errorf("hub: %w", err)
			}
			have = 0
		}
	}
	left := f.Size - have
	n, err := io.Copy(io.MultiWriter(out, h), &countReader{r: io.LimitReader(resp.Body, left+1), p: p})
	if err != nil {
		return fmt.Errorf("hub: downloading %s (%d of %d bytes kept; pulling again resumes): %w", f.Name, have+n, f.Size, err)
	}
	if n != left {
		return fmt.Errorf("hub: downloading %s: got %d bytes, want %d (pulling again resumes): %w", f.Name, have+n, f.Size, io.ErrUnexpectedEOF)
	}
	return nil
}

// rangeStart is the first byte of a 206 answer's Content-Range.
func rangeStart(resp *http.Response) (int64, bool) {
	if resp.StatusCode != http.StatusPartialContent {
		return 0, false
	}
	cr, ok := strings.CutPrefix(resp.Header.Get("Content-Range"), "bytes ")
	if !ok {
		return 0, false
	}
	s, _, ok := strings.Cut(cr, "-")
	n, err := strconv.ParseInt(s, 10, 64)
	return n, ok && err == nil
}

// escapePath escapes each part of a repository path for a URL.
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

type countReader struct {
	r io.Reader
	p *progress
}

func (c *countReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.add(int64(n))
	return n, err
}
