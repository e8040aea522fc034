package safetensors

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/vkllm/vkllm/internal/mmap"
	"github.com/vkllm/vkllm/tensor"
)

// Open maps and parses a safetensors file.
func Open(path string) (*File, error) {
	data, unmap, err := mmap.Map(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := parse(data, path)
	if err != nil {
		unmap()
		return nil, err
	}
	f.unmap = unmap
	return f, nil
}

// Sharded is a model split over several files by a
// *.safetensors.index.json.
type Sharded struct {
	shards  []*File
	paths   []string
	byName  map[string]tensor.Tensor
	tensors []tensor.Tensor
	meta    map[string]string
}

// maxIndexSize bounds the index file; real ones are well under 1 MB.
const maxIndexSize = 64 << 20

// OpenIndex opens an index and every shard it names (once each). Every
// tensor listed must be in its shard, every tensor of a shard must be
// listed for that shard, and no tensor may appear twice.
func OpenIndex(indexPath string) (*Sharded, error) {
	corrupt := func(format string, args ...any) error {
		return &tensor.CorruptError{Format: "safetensors index", Path: indexPath, Offset: -1, Reason: fmt.Sprintf(format, args...)}
	}
	st, err := os.Stat(indexPath)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if st.Size() > maxIndexSize {
		return nil, corrupt("index of %d bytes exceeds %d", st.Size(), maxIndexSize)
	}
	raw, err := os.ReadFile(indexPath)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	var idx struct {
		Metadata  map[string]any    `json:"metadata"`
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return nil, corrupt("invalid JSON: %v", err)
	}
	if len(idx.WeightMap) == 0 {
		return nil, corrupt("weight_map is missing or empty")
	}
	s := &Sharded{byName: map[string]tensor.Tensor{}, meta: map[string]string{}}
	for k, v := range idx.Metadata {
		s.meta[k] = fmt.Sprint(v)
	}
	dir := filepath.Dir(indexPath)
	files := map[string]bool{}
	for name, file := range idx.WeightMap {
		if file == "" || filepath.Base(file) != file {
			return nil, corrupt("tensor %q: shard %q is not a file name in the index's folder", name, file)
		}
		files[file] = true
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, file := range names {
		p := filepath.Join(dir, file)
		f, err := Open(p)
		if err != nil {
			s.Close()
			return nil, err
		}
		s.shards = append(s.shards, f)
		s.paths = append(s.paths, p)
		for _, t := range f.Tensors() {
			if want, listed := idx.WeightMap[t.Name]; !listed || want != file {
				s.Close()
				return nil, corrupt("tensor %q is in %s but the index puts it in %q", t.Name, file, want)
			}
			s.byName[t.Name] = t
			s.tensors = append(s.tensors, t)
		}
	}
	for name, file := range idx.WeightMap {
		if _, ok := s.byName[name]; !ok {
			s.Close()
			return nil, corrupt("tensor %q is listed for %s but not in it", name, file)
		}
	}
	return s, nil
}

// Tensors lists every tensor, shard by shard in file-name order.
func (s *Sharded) Tensors() []tensor.Tensor { return s.tensors }

// Tensor returns the named tensor.
func (s *Sharded) Tensor(name string) (tensor.Tensor, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Metadata is the index's "metadata" (values formatted as strings).
func (s *Sharded) Metadata() map[string]string { return s.meta }

// Paths lists the shard files.
func (s *Sharded) Paths() []string { return s.paths }

// Close unmaps every shard.
func (s *Sharded) Close() error {
	var first error
	for _, f := range s.shards {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	s.shards, s.byName, s.tensors = nil, nil, nil
	return first
}
