package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"unicode/utf8"

	"github.com/vkllm/vkllm/internal/mmap"
	"github.com/vkllm/vkllm/tensor"
)

// Open maps path read-only (golang.org/x/sys/unix.Mmap; where mapping is
// missing or fails, the file is read into memory) and parses it. The
// tensors' Data are views of the mapping, valid until Close. The file must
// not be truncated while mapped (reads past its new end fault).
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

// OpenIndex opens a model.safetensors.index.json and every shard its
// weight_map names (each once, from the index's folder). Every tensor
// listed must be in the shard the index names, and no tensor may be in
// two shards; a shard's tensor the index does not list is kept (it is in
// exactly one shard, so the name is not ambiguous). Failures are
// *tensor.CorruptError (index offsets are bytes into the index file).
func OpenIndex(indexPath string) (*Sharded, error) {
	corrupt := func(off int64, format string, args ...any) error {
		return &tensor.CorruptError{Format: "safetensors index", Path: indexPath, Offset: off, Reason: fmt.Sprintf(format, args...)}
	}
	st, err := os.Stat(indexPath)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if st.Size() > maxIndexSize {
		return nil, corrupt(-1, "index of %d bytes exceeds %d", st.Size(), maxIndexSize)
	}
	raw, err := os.ReadFile(indexPath)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	weightMap, meta, err := parseIndex(raw)
	if err != nil {
		var he *headerError
		if errors.As(err, &he) {
			return nil, corrupt(he.offset, "%s", he.msg)
		}
		return nil, corrupt(-1, "%v", err)
	}
	if len(weightMap) == 0 {
		return nil, corrupt(-1, "weight_map is missing or empty")
	}
	files := map[string]bool{}
	for name, file := range weightMap {
		if file == "" || file == "." || file == ".." || filepath.Base(file) != file {
			return nil, corrupt(-1, "tensor %q: shard %q is not a file name in the index's folder", name, file)
		}
		files[file] = true
	}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)

	s := &Sharded{byName: map[string]tensor.Tensor{}, meta: meta}
	inShard := map[string]string{} // tensor name → shard file it was found in
	dir := filepath.Dir(indexPath)
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
			if other, dup := inShard[t.Name]; dup {
				s.Close()
				return nil, corrupt(-1, "tensor %q is in both %s and %s", t.Name, other, file)
			}
			if want, listed := weightMap[t.Name]; listed && want != file {
				s.Close()
				return nil, corrupt(-1, "tensor %q is in %s but the index puts it in %s", t.Name, file, want)
			}
			inShard[t.Name] = file
			s.byName[t.Name] = t
			s.tensors = append(s.tensors, t)
		}
	}
	for _, name := range sortedKeys(weightMap) {
		if _, ok := inShard[name]; !ok {
			s.Close()
			return nil, corrupt(-1, "tensor %q is listed for %s but not in it", name, weightMap[name])
		}
	}
	return s, nil
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// parseIndex reads {"metadata": {...}, "weight_map": {name: file}}.
// Metadata strings are kept as they are, other values as their JSON text
// (total_size 16060522496 → "16060522496"). Duplicate keys fail.
func parseIndex(raw []byte) (weightMap, meta map[string]string, err error) {
	if !utf8.Valid(raw) {
		return nil, nil, &headerError{offset: int64(firstInvalidUTF8(raw)), msg: "index is not valid UTF-8"}
	}
	w := newJSONWalker(raw)
	err = w.object("the index", func(key string, _ int64) error {
		switch key {
		case "weight_map":
			weightMap = map[string]string{}
			return w.object("weight_map", func(name string, _ int64) error {
				file, err := w.str(fmt.Sprintf("weight_map[%q]", name))
				weightMap[name] = file
				return err
			})
		case "metadata":
			if w.peekNull() {
				_, err := w.next()
				return err
			}
			meta = map[string]string{}
			return w.object("metadata", func(k string, _ int64) error {
				var v json.RawMessage
				if err := w.dec.Decode(&v); err != nil {
					return w.fail("invalid JSON: %v", err)
				}
				var s string
				if json.Unmarshal(v, &s) == nil {
					meta[k] = s
					return nil
				}
				var buf bytes.Buffer
				if err := json.Compact(&buf, v); err != nil {
					return w.fail("invalid JSON: %v", err)
				}
				meta[k] = buf.String()
				return nil
			})
		}
		return w.skip()
	})
	if err == nil {
		err = w.end()
	}
	return weightMap, meta, err
}

// Tensors lists every tensor, shard by shard in file-name order.
func (s *Sharded) Tensors() []tensor.Tensor { return s.tensors }

// Tensor returns the named tensor.
func (s *Sharded) Tensor(name string) (tensor.Tensor, bool) {
	t, ok := s.byName[name]
	return t, ok
}

// Metadata is the index's "metadata": strings as they are, other values
// as their JSON text (nil if absent).
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
