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

// bigFile writes (once per process) a ~1 GB safetensors file of 256 BF16
// tensors in the system temp dir.
func bigFile(b *testing.B) string {
	path := filepath.Join(os.TempDir(), "vkllm-bench-1g.safetensors")
	if st, err := os.Stat(path); err == nil && st.Size() > 1<<30 {
		return path
	}
	row := make([]byte, 2*4096)
	for i := range row {
		row[i] = byte(i * 31)
	}
	var ts []tensor.Tensor
	for i := range 256 {
		data := make([]byte, 0, 2*4096*512)
		for range 512 {
			data = append(data, row...)
		}
		ts = append(ts, tensor.Tensor{Name: fmt.Sprintf("model.layers.%d.weight", i), DType: tensor.BF16, Shape: []int64{512, 4096}, Data: data})
	}
	if err := WriteFile(path, ts, map[string]string{"format": "pt"}); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkOpen1GB compares Open (map + validate; data untouched) and
// Open plus reading one byte per 4 KiB page with reading the file once
// (io.Copy to io.Discard). The metric x-read is open time ÷ read time.
func BenchmarkOpen1GB(b *testing.B) {
	path := bigFile(b)
	readOnce := func() time.Duration {
		start := time.Now()
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, f)
		f.Close()
		return time.Since(start)
	}
	for _, touch := range []bool{false, true} {
		b.Run(fmt.Sprintf("touch=%v", touch), func(b *testing.B) {
			var open, read time.Duration
			for b.Loop() {
				read += readOnce()
				start := time.Now()
				f, err := Open(path)
				if err != nil {
					b.Fatal(err)
				}
				if touch {
					var sum byte
					for _, t := range f.Tensors() {
						for i := 0; i < len(t.Data); i += 4096 {
							sum += t.Data[i]
						}
					}
					_ = sum
				}
				f.Close()
				open += time.Since(start)
			}
			b.ReportMetric(float64(open)/float64(read), "x-read")
			b.ReportMetric(float64(open.Microseconds())/float64(b.N), "open-µs")
		})
	}
}
