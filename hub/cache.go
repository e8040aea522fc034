package hub

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The cache is huggingface_hub's own layout, so a model pulled by
// huggingface-cli or transformers is not fetched again and a model
// pulled here serves them:
//
//	CacheDir/models--OWNER--REPO/
//	  blobs/SHA256 or GITOID       the files' bytes, named by digest
//	  blobs/….incomplete           a download under way (resumed by Range)
//	  refs/main                    the commit a revision last pointed at
//	  snapshots/COMMIT/PATH        a relative symlink to ../../blobs/…
//	CacheDir/.locks/models--OWNER--REPO/BLOB.lock   one writer per blob

// repoDir is the cache folder of a repository.
func repoDir(cache string, r Ref) string {
	return filepath.Join(cache, "models--"+r.Owner+"--"+r.Repo)
}

func lockPath(cache string, r Ref, blob string) string {
	return filepath.Join(cache, ".locks", "models--"+r.Owner+"--"+r.Repo, blob+".lock")
}

// snapshotCommit is the commit the cache holds for the revision: the
// revision itself when it is a commit with a snapshot, else refs/REV.
func snapshotCommit(cache string, r Ref) (string, error) {
	dir := repoDir(cache, r)
	rev := r.Rev()
	if isHex(rev, 40) {
		if _, err := os.Stat(filepath.Join(dir, "snapshots", rev)); err == nil {
			return rev, nil
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "refs", filepath.FromSlash(rev)))
	if err != nil {
		return "", fmt.Errorf("%w: %s@%s was never pulled into %s", ErrOffline, r.RepoID(), rev, cache)
	}
	commit := strings.TrimSpace(string(b))
	if !isHex(commit, 40) {
		return "", fmt.Errorf("hub: %s: refs/%s holds %q, not a commit", dir, rev, commit)
	}
	return commit, nil
}

// snapshotFiles lists the files of a snapshot (paths in the repository)
// whose content is there (a link to a missing blob is left out).
func snapshotFiles(snap string) ([]File, error) {
	var files []File
	err := filepath.WalkDir(snap, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		st, err := os.Stat(p) // follows the link
		if err != nil || !st.Mode().IsRegular() {
			return nil
		}
		rel, _ := filepath.Rel(snap, p)
		files = append(files, File{Name: filepath.ToSlash(rel), Size: st.Size()})
		return nil
	})
	return files, err
}

// writeRef records that the revision points at commit (atomically).
func writeRef(cache string, r Ref, commit string) error {
	if r.Rev() == commit {
		return nil
	}
	p := filepath.Join(repoDir(cache, r), "refs", filepath.FromSlash(r.Rev()))
	if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == commit {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".ref-*")
	if err != nil {
		return err
	}
	tmp.WriteString(commit)
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// link makes snapshots/COMMIT/NAME point at the blob: a relative symlink
// as huggingface_hub makes, else (a file system without links) a hard
// link, else a copy.
func link(snap, name, blobPath string) error {
	dst := filepath.Join(snap, filepath.FromSlash(name))
	if _, err := os.Stat(dst); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	rel, err := filepath.Rel(filepath.Dir(dst), blobPath)
	if err != nil {
		return err
	}
	tmp := dst + ".tmp-link"
	os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		if err := os.Link(blobPath, tmp); err != nil {
			if err := copyFile(blobPath, tmp); err != nil {
				return err
			}
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// Cached is a repository in the cache.
type Cached struct {
	Repo      string // OWNER/REPO
	Dir       string
	Size      int64 // bytes of its blobs (partial downloads left out)
	Snapshots []CachedSnapshot
}

// CachedSnapshot is one commit of a cached repository.
type CachedSnapshot struct {
	Commit string
	Refs   []string // the revisions pointing at it (main, …)
	Files  []File
}

// List is the models in the cache dir, by repository name.
func List(cache string) ([]Cached, error) {
	ents, err := os.ReadDir(cache)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	var out []Cached
	for _, e := range ents {
		owner, repo, ok := strings.Cut(strings.TrimPrefix(e.Name(), "models--"), "--")
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "models--") || !ok {
			continue
		}
		dir := filepath.Join(cache, e.Name())
		c := Cached{Repo: owner + "/" + repo, Dir: dir}
		blobs, _ := os.ReadDir(filepath.Join(dir, "blobs"))
		for _, b := range blobs {
			if info, err := b.Info(); err == nil && info.Mode().IsRegular() && !strings.HasSuffix(b.Name(), ".incomplete") {
				c.Size += info.Size()
			}
		}
		refs := map[string][]string{}
		filepath.WalkDir(filepath.Join(dir, "refs"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, err := os.ReadFile(p); err == nil {
					rel, _ := filepath.Rel(filepath.Join(dir, "refs"), p)
					commit := strings.TrimSpace(string(b))
					refs[commit] = append(refs[commit], filepath.ToSlash(rel))
				}
			}
			return nil
		})
		snaps, _ := os.ReadDir(filepath.Join(dir, "snapshots"))
		for _, s := range snaps {
			files, _ := snapshotFiles(filepath.Join(dir, "snapshots", s.Name()))
			c.Snapshots = append(c.Snapshots, CachedSnapshot{Commit: s.Name(), Refs: refs[s.Name()], Files: files})
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Repo < out[j].Repo })
	return out, nil
}

// Remove deletes a model from the cache dir: with a quantisation or a
// file in r, those files of the snapshot; else the whole snapshot of r's
// revision and the refs pointing at it. Blobs no snapshot links to any
// more are deleted, each under the lock a pull (ours or
// huggingface_hub's) holds while it writes that blob and links it, so a
// pull of the same model at the same time keeps what it fetched; Remove
// waits for those locks until ctx is done. The repository's folder goes
// when nothing is left in it. It returns the bytes freed.
func Remove(ctx context.Context, cache string, r Ref) (int64, error) {
	dir := repoDir(cache, r)
	commit, err := snapshotCommit(cache, r)
	if err != nil {
		return 0, fmt.Errorf("%w (nothing to remove)", err)
	}
	snap := filepath.Join(dir, "snapshots", commit)
	if r.Quant != "" || r.File != "" {
		files, err := snapshotFiles(snap)
		if err != nil {
			return 0, fmt.Errorf("hub: %w", err)
		}
		c, err := choose(r, files)
		if err != nil {
			return 0, err
		}
		for _, f := range c.files {
			if err := os.Remove(filepath.Join(snap, filepath.FromSlash(f))); err != nil {
				return 0, fmt.Errorf("hub: %w", err)
			}
		}
	} else {
		if err := os.RemoveAll(snap); err != nil {
			return 0, fmt.Errorf("hub: %w", err)
		}
		filepath.WalkDir(filepath.Join(dir, "refs"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == commit {
					os.Remove(p)
				}
			}
			return nil
		})
	}
	return collect(ctx, cache, r)
}

// linked is the set of blobs the snapshots of a repository folder link
// to.
func linked(dir string) map[string]bool {
	used := map[string]bool{}
	filepath.WalkDir(filepath.Join(dir, "snapshots"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type()&fs.ModeSymlink != 0 {
			if t, err := os.Readlink(p); err == nil {
				used[filepath.Base(t)] = true
			}
		}
		return nil
	})
	return used
}

// collect deletes the blobs of r's repository folder no snapshot links
// to (partial downloads are kept: another process may be writing one),
// and the folder when no snapshot and no blob is left.
func collect(ctx context.Context, cache string, r Ref) (int64, error) {
	dir := repoDir(cache, r)
	snaps := filepath.Join(dir, "snapshots")
	used := linked(dir)
	var freed int64
	blobs, _ := os.ReadDir(filepath.Join(dir, "blobs"))
	for _, b := range blobs {
		if used[b.Name()] || strings.HasSuffix(b.Name(), ".incomplete") {
			continue
		}
		n, err := removeBlob(ctx, cache, r, b.Name())
		freed += n
		if err != nil {
			return freed, err
		}
	}
	// empty snapshot folders go, and the repository when none is left
	left := 0
	ents, _ := os.ReadDir(snaps)
	for _, e := range ents {
		files, _ := snapshotFiles(filepath.Join(snaps, e.Name()))
		if len(files) == 0 {
			os.RemoveAll(filepath.Join(snaps, e.Name()))
			continue
		}
		left++
	}
	if left == 0 {
		if blobs, _ := os.ReadDir(filepath.Join(dir, "blobs")); len(blobs) == 0 { // none partial, none a pull just wrote
			return freed, os.RemoveAll(dir)
		}
	}
	return freed, nil
}

// removeBlob deletes blob of r's repository under its lock, unless a
// snapshot links to it by then (a pull that held the lock linked it), and
// returns its size.
func removeBlob(ctx context.Context, cache string, r Ref, blob string) (int64, error) {
	dir := repoDir(cache, r)
	lp := lockPath(cache, r, blob)
	if err := os.MkdirAll(filepath.Dir(lp), 0o755); err != nil {
		return 0, fmt.Errorf("hub: %w", err)
	}
	unlock, err := lockFile(ctx, lp)
	if err != nil {
		return 0, fmt.Errorf("hub: locking %s: %w", lp, err)
	}
	defer unlock()
	if linked(dir)[blob] {
		return 0, nil
	}
	p := filepath.Join(dir, "blobs", blob)
	info, err := os.Stat(p)
	if err != nil {
		return 0, nil // gone already
	}
	if err := os.Remove(p); err != nil {
		return 0, fmt.Errorf("hub: %w", err)
	}
	return info.Size(), nil
}
