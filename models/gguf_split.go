package models

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/tensor"
	"github.com/vkllm/vkllm/tensor/gguf"
)

// A split GGUF, as llama.cpp's gguf-split writes it, is one model in
// files NAME-00001-of-0000N.gguf … NAME-0000N-of-0000N.gguf: the first
// holds all the metadata, each holds some of the tensors and the keys
// split.no (0-based), split.count and split.tensors.count.

// SplitError is a split GGUF whose shards do not fit together.
type SplitError struct {
	Path   string
	Reason string
}

func (e *SplitError) Error() string { return "models: split GGUF " + e.Path + ": " + e.Reason }

// Code implements errcode.Coder.
func (e *SplitError) Code() errcode.Code { return errcode.ModelCorrupt }

var splitName = regexp.MustCompile(`-(\d{5})-of-(\d{5})\.gguf$`)

// splitSource is the tensors of all the shards of a split GGUF.
type splitSource struct {
	files   []*gguf.File
	tensors []tensor.Tensor
	byName  map[string]int
	paths   []string
	size    int64
}

// openSplit opens the other shards of the split GGUF whose first shard
// (split.no 0) is first, opened from path; n is its split.count.
func openSplit(path string, first *gguf.File, n int64, size int64) (*splitSource, error) {
	bad := func(format string, args ...any) error {
		return &SplitError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	m := splitName.FindStringSubmatchIndex(path)
	if m == nil || path[m[4]:m[5]] != fmt.Sprintf("%05d", n) {
		return nil, bad("split.count is %d but the name does not end in -00001-of-%05d.gguf", n, n)
	}
	if n > 9999 {
		return nil, bad("split.count %d", n)
	}
	s := &splitSource{byName: map[string]int{}}
	add := func(g *gguf.File, p string, sz int64) error {
		s.files = append(s.files, g)
		s.paths = append(s.paths, p)
		s.size += sz
		for _, t := range g.Tensors() {
			if _, dup := s.byName[t.Name]; dup {
				return bad("tensor %q is in two shards", t.Name)
			}
			s.byName[t.Name] = len(s.tensors)
			s.tensors = append(s.tensors, t)
		}
		return nil
	}
	if err := add(first, path, size); err != nil {
		return nil, err
	}
	for k := int64(2); k <= n; k++ {
		p := path[:m[0]] + fmt.Sprintf("-%05d-of-%05d.gguf", k, n)
		st, err := os.Stat(p)
		if err != nil {
			s.closeFrom(1)
			if errors.Is(err, os.ErrNotExist) {
				return nil, &NotFoundError{Path: p, What: fmt.Sprintf("shard %d of %d of %s", k, n, filepath.Base(path))}
			}
			return nil, fmt.Errorf("models: %w", err)
		}
		g, err := gguf.Open(p)
		if err != nil {
			s.closeFrom(1)
			return nil, err
		}
		no, _ := g.Int("split.no")
		count, _ := g.Int("split.count")
		if no != k-1 || count != n {
			g.Close()
			s.closeFrom(1)
			return nil, bad("%s says it is shard %d of %d", filepath.Base(p), no+1, count)
		}
		if err := add(g, p, st.Size()); err != nil {
			s.closeFrom(1)
			return nil, err
		}
	}
	if total, ok := first.Int("split.tensors.count"); ok && total != int64(len(s.tensors)) {
		s.closeFrom(1)
		return nil, bad("the shards hold %d tensors, split.tensors.count says %d", len(s.tensors), total)
	}
	return s, nil
}

// closeFrom closes the shards from index i on (the first belongs to the
// caller until openSplit succeeds).
func (s *splitSource) closeFrom(i int) {
	for _, f := range s.files[i:] {
		f.Close()
	}
}

func (s *splitSource) Tensors() []tensor.Tensor { return s.tensors }

func (s *splitSource) Tensor(name string) (tensor.Tensor, bool) {
	i, ok := s.byName[name]
	if !ok {
		return tensor.Tensor{}, false
	}
	return s.tensors[i], true
}

// Close closes every shard, the first included.
func (s *splitSource) Close() error {
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}
