package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
)

// Model is a pulled model in the cache.
type Model struct {
	Ref    Ref
	Commit string
	Kind   Kind
	// Path is what models.Open and engine.Open take: the (first) GGUF
	// file, or the snapshot folder of a safetensors model or PEFT adapter
	// (what engine.Options.Adapters takes).
	Path  string
	Files []string // the files pulled, paths in the repository
}

// Pull brings the model a name picks into the cache (what is there
// already is not fetched again) and says where it is. Offline, or when
// the Hub cannot be reached, it is the cached snapshot of the revision or
// an error wrapping ErrOffline.
func (c *Client) Pull(ctx context.Context, r Ref) (*Model, error) {
	if c.CacheDir == "" {
		return nil, errors.New("hub: no cache folder (set HF_HUB_CACHE or HF_HOME)")
	}
	if c.Offline {
		return c.cached(r, "HF_HUB_OFFLINE is set")
	}
	info, err := c.Info(ctx, r)
	if isUnreachable(err) {
		m, cerr := c.cached(r, err.Error())
		if cerr != nil {
			return nil, err
		}
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	ch, err := choose(r, info.Files)
	if err != nil {
		return nil, err
	}
	if err := c.fetchAll(ctx, r, info, ch.files); err != nil {
		return nil, err
	}
	snap := filepath.Join(repoDir(c.CacheDir, r), "snapshots", info.Commit)
	files := ch.files
	if ch.index != "" {
		shards, err := indexShards(filepath.Join(snap, ch.index))
		if err != nil {
			return nil, err
		}
		if err := c.fetchAll(ctx, r, info, shards); err != nil {
			return nil, err
		}
		files = append(files, shards...)
	}
	if err := writeRef(c.CacheDir, r, info.Commit); err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	return model(r, info.Commit, snap, ch.kind, files), nil
}

// cached is the model r names from the cache alone; why says why the Hub
// was not asked.
func (c *Client) cached(r Ref, why string) (*Model, error) {
	commit, err := snapshotCommit(c.CacheDir, r)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, why)
	}
	snap := filepath.Join(repoDir(c.CacheDir, r), "snapshots", commit)
	files, err := snapshotFiles(snap)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	ch, err := choose(r, files)
	if err != nil {
		return nil, fmt.Errorf("%w (%s; the cached snapshot %s has %d files)", err, why, commit, len(files))
	}
	all := ch.files
	if ch.index != "" {
		shards, err := indexShards(filepath.Join(snap, ch.index))
		if err != nil {
			return nil, err
		}
		all = append(all, shards...)
	}
	for _, f := range all {
		if _, err := os.Stat(filepath.Join(snap, filepath.FromSlash(f))); err != nil {
			return nil, fmt.Errorf("%w: %s@%s lacks %s in the cache (%s)", ErrOffline, r.RepoID(), r.Rev(), f, why)
		}
	}
	return model(r, commit, snap, ch.kind, all), nil
}

func model(r Ref, commit, snap string, kind Kind, files []string) *Model {
	m := &Model{Ref: r, Commit: commit, Kind: kind, Path: snap, Files: files}
	if kind == GGUF {
		m.Path = filepath.Join(snap, filepath.FromSlash(files[0]))
	}
	return m
}

// indexShards is the shard files a *.safetensors.index.json names.
func indexShards(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(b, &idx); err != nil {
		return nil, fmt.Errorf("hub: %s: %w", path, err)
	}
	seen := map[string]bool{}
	var shards []string
	for _, f := range idx.WeightMap {
		if checkPath(f) != "" {
			return nil, fmt.Errorf("hub: %s names a bad shard %q", path, f)
		}
		if !seen[f] {
			seen[f] = true
			shards = append(shards, f)
		}
	}
	if len(shards) == 0 {
		return nil, fmt.Errorf("hub: %s names no shards", path)
	}
	sort.Strings(shards)
	return shards, nil
}

// Resolve is the local path of a model name: a Hub name (hf://…) is
// pulled with c (nil: FromEnv()) and its Path returned; anything else is
// returned as it is.
func Resolve(ctx context.Context, name string, c *Client) (string, error) {
	if !IsName(name) {
		return name, nil
	}
	r, err := Parse(name)
	if err != nil {
		return "", err
	}
	if c == nil {
		c = FromEnv()
	}
	m, err := c.Pull(ctx, r)
	if err != nil {
		return "", err
	}
	return m.Path, nil
}
