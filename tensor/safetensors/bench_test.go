package safetensors

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vkllm/vkllm/tensor"
)

// Shape of the synthetic benchmark file: 200 BF16 tensors of (2560, 1024),
// 1000 MiB of data.
const (
	benchTensors = 200
	benchRows    = 2560
	benchCols    = 1024
)

// bigFile returns a ~1 GB safetensors file in the system temp dir, written
// on first use and kept across runs (delete it to rebuild).
func bigFile(b *testing.B) (path string, size int64) {
	path = filepath.Join(os.TempDir(), "vkllm-bench-open-1g.safetensors")
	if f, err := Open(path); err == nil && len(f.Tensors()) == benchTensors {
		f.Close()
		st, _ := os.Stat(path)
		return path, st.Size()
	}
	// One buffer shared by every tensor: Write only reads it.
	data := make([]byte, 2*benchRows*benchCols)
	for i := range data {
		data[i] = byte(i*31 + i>>12)
	}
	ts := make([]tensor.Tensor, benchTensors)
	for i := range ts {
		ts[i] = tensor.Tensor{Name: fmt.Sprintf("model.layers.%d.mlp.weight", i), DType: tensor.BF16,
			Shape: []int64{benchRows, benchCols}, Data: data}
	}
	if err := WriteFile(path, ts, map[string]string{"format": "pt"}); err != nil {
		b.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, st.Size()
}

// readFile reads path once into io.Discard (through a 1 MiB buffer).
func readFile(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if _, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, make([]byte, 1<<20)); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkOpen1GB compares, on a ~1 GB file in the page cache:
//
//	read        reading the file once (io.Copy to io.Discard): the baseline
//	open        Open (map + validate the header) + Close, data untouched
//	open+touch  Open + one byte read per 4 KiB page + Close: the mmap cost
//
// x-read is each case's time ÷ read's time, measured just before it.
//
//	go test ./tensor/safetensors -run='^$' -bench=Open1GB -benchtime=3x
func BenchmarkOpen1GB(b *testing.B) {
	path, size := bigFile(b)
	readFile(b, path) // warm the page cache
	readTime := func() time.Duration {
		best := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			readFile(b, path)
			best = min(best, time.Since(start))
		}
		return best
	}
	b.Run("read", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			readFile(b, path)
		}
	})
	for _, touch := range []bool{false, true} {
		name := "open"
		if touch {
			name = "open+touch"
		}
		b.Run(name, func(b *testing.B) {
			read := readTime()
			b.SetBytes(size)
			var sum byte
			for b.Loop() {
				f, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				if touch {
					for _, t := range f.Tensors() {
						for i := 0; i < len(t.Data); i += 4096 {
							sum += t.Data[i]
						}
					}
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
			}
			perOp := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(perOp)/float64(read), "x-read")
			b.ReportMetric(float64(read.Microseconds()), "read-µs")
			_ = sum
		})
	}
}
