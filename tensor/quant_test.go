package tensor

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

type manifest struct {
	Dequantize map[string]struct{ Elements, Bytes int }
	Quantize   map[string]struct{ Elements, Bytes int }
}

func loadManifest(t *testing.T) manifest {
	raw, err := os.ReadFile("../testdata/quant/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestDequantizeGolden compares with gguf.quants.dequantize bit for bit.
func TestDequantizeGolden(t *testing.T) {
	m := loadManifest(t)
	if len(m.Dequantize) < 12 {
		t.Fatalf("manifest lists %d types", len(m.Dequantize))
	}
	for name, c := range m.Dequantize {
		t.Run(name, func(t *testing.T) {
			dt, ok := ParseDType(name)
			if !ok {
				t.Fatalf("unknown %s", name)
			}
			raw, err := os.ReadFile(filepath.Join("../testdata/quant", name+".deq.bin"))
			if err != nil {
				t.Fatal(err)
			}
			want := floats(raw[c.Bytes:])
			got := make([]float32, c.Elements)
			if err := Dequantize(dt, raw[:c.Bytes], got); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d: %v (%#x), want %v (%#x)", i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
		})
	}
}

// TestQ8K checks the one type gguf-py cannot dequantise, by its definition.
func TestQ8K(t *testing.T) {
	b := make([]byte, Q8_K.BlockBytes())
	binary.LittleEndian.PutUint32(b, math.Float32bits(0.5))
	for i := range 256 {
		b[4+i] = byte(int8(i - 128))
	}
	y := make([]float32, 256)
	if err := Dequantize(Q8_K, b, y); err != nil {
		t.Fatal(err)
	}
	for i, v := range y {
		if v != 0.5*float32(i-128) {
			t.Fatalf("element %d = %v", i, v)
		}
	}
}

// TestQuantizeGolden compares with gguf.quants.quantize byte for byte.
func TestQuantizeGolden(t *testing.T) {
	m := loadManifest(t)
	for name, c := range m.Quantize {
		t.Run(name, func(t *testing.T) {
			dt, _ := ParseDType(name)
			raw, err := os.ReadFile(filepath.Join("../testdata/quant", name+".q.bin"))
			if err != nil {
				t.Fatal(err)
			}
			x := floats(raw[:4*c.Elements])
			want := raw[4*c.Elements:]
			got := make([]byte, c.Bytes)
			if err := Quantize(dt, x, got); err != nil {
				t.Fatal(err)
			}
			for i := range want {
				if got[i] != want[i] {
					bb := dt.BlockBytes()
					t.Fatalf("byte %d (block %d, offset %d): %#x, want %#x", i, i/bb, i%bb, got[i], want[i])
				}
			}
		})
	}
}

// TestRoundTrip bounds the quantisation error per type: every value is
// within half a step (plus the rounding of d to f16) of its input.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 32*64)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, c := range []struct {
		dt    DType
		steps float64 // levels across the block's range
	}{{Q8_0, 254}, {Q4_0, 15}, {Q4_1, 15}, {Q5_0, 31}, {Q5_1, 31}} {
		n, _ := c.dt.Bytes(int64(len(x)))
		q := make([]byte, n)
		if err := Quantize(c.dt, x, q); err != nil {
			t.Fatal(err)
		}
		y := make([]float32, len(x))
		if err := Dequantize(c.dt, q, y); err != nil {
			t.Fatal(err)
		}
		for b := 0; b < len(x); b += 32 {
			lo, hi := x[b], x[b]
			for _, v := range x[b : b+32] {
				lo, hi = min(lo, v), max(hi, v)
			}
			amax := math.Max(math.Abs(float64(lo)), math.Abs(float64(hi)))
			// Affine types: levels span [min, max], error ≤ half a step.
			step, bound := float64(hi-lo)/c.steps, 0.5
			switch c.dt {
			case Q8_0: // symmetric: d = amax/127
				step = 2 * amax / c.steps
			case Q4_0, Q5_0:
				// d = max/−2^(bits−1): levels −2^(b−1)…2^(b−1)−1 reach the
				// largest value exactly but the far end only to one step short.
				step, bound = 2*amax/(c.steps+1), 1
			}
			for i := b; i < b+32; i++ {
				// Plus the f16 rounding of d (and m), scaled by the level.
				if e := math.Abs(float64(x[i] - y[i])); e > bound*step+amax*2e-3 {
					t.Fatalf("%v: element %d: %v → %v (error %g, step %g)", c.dt, i, x[i], y[i], e, step)
				}
			}
		}
	}
}

func TestDequantizeErrors(t *testing.T) {
	if err := Dequantize(Q4_0, make([]byte, 17), make([]float32, 32)); err == nil {
		t.Error("short input accepted")
	}
	if err := Dequantize(Q4_K, make([]byte, 144), make([]float32, 200)); err == nil {
		t.Error("partial block accepted")
	}
	if err := Dequantize(I32, make([]byte, 4), make([]float32, 1)); err == nil {
		t.Error("integer type accepted")
	}
	if err := Quantize(Q4_K, make([]float32, 256), make([]byte, 144)); err == nil {
		t.Error("Q4_K quantize accepted")
	}
}

func FuzzDequantize(f *testing.F) {
	f.Add(uint8(Q4_K), make([]byte, 144), 256)
	f.Add(uint8(Q8_0), make([]byte, 34), 32)
	f.Fuzz(func(t *testing.T, dt uint8, src []byte, n int) {
		if n < 0 || n > 1<<16 {
			return
		}
		dst := make([]float32, n)
		_ = Dequantize(DType(dt), src, dst) // must not panic
	})
}

func BenchmarkDequantize(b *testing.B) {
	for _, dt := range []DType{F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K} {
		b.Run(dt.String(), func(b *testing.B) {
			n := 4096
			size, _ := dt.Bytes(int64(n))
			src := make([]byte, size)
			for i := range src {
				src[i] = byte(i * 7)
			}
			dst := make([]float32, n)
			b.SetBytes(size)
			for b.Loop() {
				Dequantize(dt, src, dst)
			}
		})
	}
}
