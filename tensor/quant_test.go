package tensor

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/x448/float16"
)

// The types Dequantize and Quantize support.
var (
	dequantTypes = []DType{F32, F16, BF16, F64, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS}
	quantTypes   = []DType{F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1}
)

func supports(list []DType, dt DType) bool {
	for _, t := range list {
		if t == dt {
			return true
		}
	}
	return false
}

// manifest is testdata/quant/manifest.json (tools/make_quant_vectors.py).
type manifest struct {
	Versions   map[string]string
	Dequantize map[string]vectorInfo
	Quantize   map[string]vectorInfo
}

type vectorInfo struct {
	Elements, Bytes int
	Reference       string
}

func loadManifest(t *testing.T) manifest {
	t.Helper()
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

// readVector returns testdata/quant/<name>, checking its size.
func readVector(t *testing.T, name string, size int) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../testdata/quant", name))
	if err != nil {
		t.Fatal(err)
	}
	if len(raw) != size {
		t.Fatalf("%s: %d bytes, manifest says %d", name, len(raw), size)
	}
	return raw
}

func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestDequantizeGolden compares every supported type with the vectors from
// gguf.quants.dequantize (or ggml's definition where gguf lacks the type)
// bit for bit.
func TestDequantizeGolden(t *testing.T) {
	m := loadManifest(t)
	for _, dt := range dequantTypes {
		t.Run(dt.String(), func(t *testing.T) {
			c, ok := m.Dequantize[dt.String()]
			if !ok {
				t.Fatalf("no vector for %v", dt)
			}
			raw := readVector(t, dt.String()+".deq.bin", c.Bytes+4*c.Elements)
			want := floats(raw[c.Bytes:])
			got := make([]float32, c.Elements)
			if err := Dequantize(dt, raw[:c.Bytes], got); err != nil {
				t.Fatal(err)
			}
			bs, bb := dt.BlockSize(), dt.BlockBytes()
			for i := range want {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("element %d (block %d at byte %d): %v (%#x), want %v (%#x) [%s]",
						i, i/bs, i/bs*bb, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]), c.Reference)
				}
			}
		})
	}
}

// TestQuantizeGolden compares with gguf.quants.quantize byte for byte; the
// inputs include zeros, equal values, negatives, huge and subnormal blocks
// and rounding ties.
func TestQuantizeGolden(t *testing.T) {
	m := loadManifest(t)
	for _, dt := range quantTypes {
		t.Run(dt.String(), func(t *testing.T) {
			c, ok := m.Quantize[dt.String()]
			if !ok {
				t.Fatalf("no vector for %v", dt)
			}
			raw := readVector(t, dt.String()+".q.bin", 4*c.Elements+c.Bytes)
			x := floats(raw[:4*c.Elements])
			want := raw[4*c.Elements:]
			got := make([]byte, c.Bytes)
			if err := Quantize(dt, x, got); err != nil {
				t.Fatal(err)
			}
			bs, bb := dt.BlockSize(), dt.BlockBytes()
			for i := range want {
				if got[i] != want[i] {
					blk := i / bb
					t.Fatalf("byte %d (block %d, offset %d): %#x, want %#x; block input %v",
						i, blk, i%bb, got[i], want[i], x[blk*bs:(blk+1)*bs])
				}
			}
		})
	}
}

// putBlock builds one block from its fields, in order: float32 values
// become f16 (or f32 for Q8_K's d), byte slices are copied.
func putBlock(fields ...any) []byte {
	var b []byte
	for _, f := range fields {
		switch f := f.(type) {
		case float32:
			b = binary.LittleEndian.AppendUint16(b, float16.Fromfloat32(f).Bits())
		case float64: // an f32 field
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(f)))
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, f)
		case []byte:
			b = append(b, f...)
		default:
			panic("putBlock: bad field")
		}
	}
	return b
}

func seq(n int, f func(i int) byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = f(i)
	}
	return b
}

// TestDequantizeByHand checks each 32-element layout and Q8_K against
// values worked out from ggml's struct definitions, independently of the
// Python vectors (and the only check of Q8_1's 36-byte layout beside them).
func TestDequantizeByHand(t *testing.T) {
	nibbles := seq(16, func(i int) byte { return byte(i) | byte(15-i)<<4 }) // element j: j, element j+16: 15−j
	ramp := seq(32, func(i int) byte { return byte(int8(i - 16)) })
	for _, c := range []struct {
		dt    DType
		block []byte
		want  func(j int) float32
	}{
		{Q4_0, putBlock(float32(0.5), nibbles), func(j int) float32 {
			if j < 16 {
				return 0.5 * float32(j-8)
			}
			return 0.5 * float32(15-(j-16)-8)
		}},
		{Q4_1, putBlock(float32(2), float32(-1), nibbles), func(j int) float32 {
			if j < 16 {
				return 2*float32(j) - 1
			}
			return 2*float32(15-(j-16)) - 1
		}},
		// qh = 0xAAAA5555: the 5th bit is set for even j < 16 and odd j ≥ 16.
		{Q5_0, putBlock(float32(0.25), uint32(0xAAAA5555), nibbles), func(j int) float32 {
			q := j
			if j >= 16 {
				q = 15 - (j - 16)
			}
			if (j < 16 && j%2 == 0) || (j >= 16 && j%2 == 1) {
				q += 16
			}
			return 0.25 * float32(q-16)
		}},
		{Q5_1, putBlock(float32(1), float32(0.5), uint32(0xFFFF0000), nibbles), func(j int) float32 {
			if j < 16 {
				return float32(j) + 0.5
			}
			return float32(15-(j-16)+16) + 0.5
		}},
		{Q8_0, putBlock(float32(-3), ramp), func(j int) float32 { return -3 * float32(j-16) }},
		{Q8_1, putBlock(float32(0.125), float32(99), ramp), func(j int) float32 { return 0.125 * float32(j-16) }},
		{Q8_K, putBlock(float64(0.5), seq(256, func(i int) byte { return byte(i) }), make([]byte, 32)),
			func(j int) float32 { return 0.5 * float32(int8(byte(j))) }},
	} {
		t.Run(c.dt.String(), func(t *testing.T) {
			if len(c.block) != c.dt.BlockBytes() {
				t.Fatalf("test block is %d bytes, want %d", len(c.block), c.dt.BlockBytes())
			}
			y := make([]float32, c.dt.BlockSize())
			if err := Dequantize(c.dt, c.block, y); err != nil {
				t.Fatal(err)
			}
			for j, v := range y {
				if w := c.want(j); v != w {
					t.Fatalf("element %d = %v, want %v", j, v, w)
				}
			}
		})
	}
}

// halfOracle decodes binary16 from its definition: (−1)^s · 2^(e−15) ·
// (1 + m/1024), or 2^−14 · m/1024 for e = 0.
func halfOracle(h uint16) float64 {
	sign, e, m := 1.0, int(h>>10&0x1F), float64(h&0x3FF)
	if h&0x8000 != 0 {
		sign = -1
	}
	switch e {
	case 0x1F:
		if m != 0 {
			return math.NaN()
		}
		return sign * math.Inf(1)
	case 0:
		return sign * math.Ldexp(m/1024, -14)
	}
	return sign * math.Ldexp(1+m/1024, e-15)
}

// TestHalfExhaustive decodes all 65536 F16 and BF16 patterns against the
// definitions, and checks that every finite F16 value survives Quantize.
func TestHalfExhaustive(t *testing.T) {
	src := make([]byte, 2<<16)
	for i := range 1 << 16 {
		binary.LittleEndian.PutUint16(src[2*i:], uint16(i))
	}
	got := make([]float32, 1<<16)
	if err := Dequantize(F16, src, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		want := halfOracle(uint16(i))
		if math.IsNaN(want) != math.IsNaN(float64(v)) || !math.IsNaN(want) && (float64(v) != want || math.Signbit(float64(v)) != math.Signbit(want)) {
			t.Fatalf("F16 %#04x = %v, want %v", i, v, want)
		}
	}
	back := make([]byte, len(src))
	if err := Quantize(F16, got, back); err != nil {
		t.Fatal(err)
	}
	for i := range 1 << 16 {
		if !math.IsNaN(float64(got[i])) && binary.LittleEndian.Uint16(back[2*i:]) != uint16(i) {
			t.Fatalf("F16 %#04x → %v → %#04x", i, got[i], binary.LittleEndian.Uint16(back[2*i:]))
		}
	}

	if err := Dequantize(BF16, src, got); err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		// bfloat16 is the top half of a float32: sign, 8-bit exponent, 7-bit mantissa.
		sign, e, m := 1.0, i>>7&0xFF, float64(i&0x7F)
		if i&0x8000 != 0 {
			sign = -1
		}
		var want float64
		switch {
		case e == 0xFF && m != 0:
			want = math.NaN()
		case e == 0xFF:
			want = sign * math.Inf(1)
		case e == 0:
			want = sign * math.Ldexp(m/128, -126)
		default:
			want = sign * math.Ldexp(1+m/128, e-127)
		}
		if math.IsNaN(want) != math.IsNaN(float64(v)) || !math.IsNaN(want) && (float64(v) != want || math.Signbit(float64(v)) != math.Signbit(want)) {
			t.Fatalf("BF16 %#04x = %v, want %v", i, v, want)
		}
	}
}

// TestRoundTrip bounds |x − Dequantize(Quantize(x))| per block. With amax
// the block's largest |x| and u = 2⁻¹¹ the relative rounding of a normal
// f16 (d and m are stored as f16):
//
//   - Q8_0: d = amax/127, q = round(x/d): error ≤ d/2 from rounding, plus
//     |q|·|d′−d| ≤ 127·d·u = amax·u from storing d.
//   - Q4_0, Q5_0 (B = 2^(bits−1) = 8, 16): d = mx/−B maps the largest value
//     mx to level −B exactly, but its negation to B, which is clipped to
//     B−1: error ≤ |d| (elsewhere |d|/2), plus B·|d|·u = amax·u.
//   - Q4_1, Q5_1: d = (max−min)/(2^bits−1), m = min: error ≤ d/2, plus
//     |m′−m| ≤ amax·u and q·|d′−d| ≤ (max−min)·u ≤ 2·amax·u.
//   - F16: |x|·u; BF16: |x|·2⁻⁸ (round to nearest, normal range).
//
// The float32 arithmetic (x·(1/d), the products) adds a few float32 ulps of
// amax, allowed as amax·2⁻²⁰. The inputs are N(0,1), far from f16's
// subnormal and overflow ranges.
func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 32*256)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	const u = 1.0 / 2048
	for _, dt := range quantTypes {
		t.Run(dt.String(), func(t *testing.T) {
			n, _ := dt.Bytes(int64(len(x)))
			q := make([]byte, n)
			if err := Quantize(dt, x, q); err != nil {
				t.Fatal(err)
			}
			y := make([]float32, len(x))
			if err := Dequantize(dt, q, y); err != nil {
				t.Fatal(err)
			}
			worst := 0.0 // largest error / bound seen
			for b := 0; b < len(x); b += 32 {
				blk := x[b : b+32]
				lo, hi := float64(blk[0]), float64(blk[0])
				for _, v := range blk {
					lo, hi = min(lo, float64(v)), max(hi, float64(v))
				}
				amax := max(-lo, hi)
				for i := b; i < b+32; i++ {
					var bound float64
					switch dt {
					case F32:
						bound = 0
					case F16:
						bound = math.Abs(float64(x[i])) * u
					case BF16:
						bound = math.Abs(float64(x[i])) / 256
					case Q8_0:
						bound = amax/127/2 + amax*u
					case Q4_0:
						bound = amax/8 + amax*u
					case Q5_0:
						bound = amax/16 + amax*u
					case Q4_1:
						bound = (hi-lo)/15/2 + 3*amax*u
					case Q5_1:
						bound = (hi-lo)/31/2 + 3*amax*u
					}
					bound += amax / (1 << 20)
					e := math.Abs(float64(x[i]) - float64(y[i]))
					if e > bound {
						t.Fatalf("element %d: %v → %v (error %g > bound %g)", i, x[i], y[i], e, bound)
					}
					worst = max(worst, e/bound)
				}
			}
			// The bound should be near-tight: a much smaller worst case
			// would mean the test (or the quantiser) is not what it says.
			t.Logf("largest error / bound: %.3f", worst)
			if dt.Quantized() && worst < 0.5 {
				t.Errorf("largest error is only %.2f of the bound", worst)
			}
		})
	}
}

// TestSizeErrors checks the length checks and the unsupported types.
func TestSizeErrors(t *testing.T) {
	for _, c := range []struct {
		name     string
		dt       DType
		nbytes   int
		n        int
		quantize bool
	}{
		{"short", Q4_0, 17, 32, false},
		{"long", Q4_0, 19, 32, false},
		{"partial block", Q4_K, 144, 200, false},
		{"F32 short", F32, 7, 2, false},
		{"quantize short", Q8_0, 33, 32, true},
		{"quantize partial block", Q4_1, 20, 31, true},
		{"quantize F16 long", F16, 6, 2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.quantize {
				err = Quantize(c.dt, make([]float32, c.n), make([]byte, c.nbytes))
			} else {
				err = Dequantize(c.dt, make([]byte, c.nbytes), make([]float32, c.n))
			}
			if !errors.Is(err, ErrBufferSize) {
				t.Fatalf("err = %v, want ErrBufferSize", err)
			}
		})
	}
	for dt := DType(0); dt < 255; dt++ {
		var ue *UnsupportedDTypeError
		if err := Dequantize(dt, nil, nil); supports(dequantTypes, dt) != (err == nil) || err != nil && !errors.As(err, &ue) {
			t.Errorf("Dequantize(%v, empty) = %v", dt, err)
		}
		if err := Quantize(dt, nil, nil); supports(quantTypes, dt) != (err == nil) || err != nil && !errors.As(err, &ue) {
			t.Errorf("Quantize(%v, empty) = %v", dt, err)
		}
	}
}

// halfFields are the byte offsets of each block type's f16 scales.
var halfFields = map[DType][]int{
	Q4_0: {0}, Q4_1: {0, 2}, Q5_0: {0}, Q5_1: {0, 2}, Q8_0: {0}, Q8_1: {0, 2},
	Q2_K: {80, 82}, Q3_K: {108}, Q4_K: {0, 2}, Q5_K: {0, 2}, Q6_K: {208},
}

// randomData returns n elements of dt with random bits, but finite,
// moderate scales (and finite plain values), as a real model file has.
func randomData(dt DType, n int, r *rand.Rand) []byte {
	size, err := dt.Bytes(int64(n))
	if err != nil {
		panic(err)
	}
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	switch dt {
	case F32, F16, BF16, F64:
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		switch dt {
		case F64:
			for i, v := range x {
				binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(float64(v)))
			}
		default:
			if err := Quantize(dt, x, b); err != nil {
				panic(err)
			}
		}
	case Q8_K:
		for at := 0; at < len(b); at += dt.BlockBytes() {
			binary.LittleEndian.PutUint32(b[at:], math.Float32bits(float32(r.NormFloat64()*0.01)))
		}
	default:
		for at := 0; at < len(b); at += dt.BlockBytes() {
			for _, off := range halfFields[dt] {
				binary.LittleEndian.PutUint16(b[at+off:], float16.Fromfloat32(float32(r.NormFloat64()*0.05)).Bits())
			}
		}
	}
	return b
}

// TestNoAllocs: the CPU backend dequantises row by row.
func TestNoAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dt := range dequantTypes {
		src, dst := randomData(dt, 512, r), make([]float32, 512)
		if a := testing.AllocsPerRun(10, func() { _ = Dequantize(dt, src, dst) }); a != 0 {
			t.Errorf("Dequantize(%v) allocates %v times", dt, a)
		}
	}
	for _, dt := range quantTypes {
		x := make([]float32, 512)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		n, _ := dt.Bytes(512)
		dst := make([]byte, n)
		if a := testing.AllocsPerRun(10, func() { _ = Quantize(dt, x, dst) }); a != 0 {
			t.Errorf("Quantize(%v) allocates %v times", dt, a)
		}
	}
}

// FuzzDequantize: any bytes, type and count either dequantise (exactly when
// the type is supported and the size matches) or give a typed error; never
// a panic.
func FuzzDequantize(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, dt := range dequantTypes {
		n := dt.BlockSize() * 2
		f.Add(uint8(dt), randomData(dt, n, r), uint16(n))
		f.Add(uint8(dt), make([]byte, dt.BlockBytes()+1), uint16(dt.BlockSize()))
	}
	f.Add(uint8(I32), make([]byte, 4), uint16(1))
	f.Add(uint8(200), []byte{}, uint16(0))
	f.Fuzz(func(t *testing.T, dtb uint8, src []byte, n uint16) {
		dt := DType(dtb)
		dst := make([]float32, n)
		err := Dequantize(dt, src, dst)
		want, serr := dt.Bytes(int64(n))
		var ue *UnsupportedDTypeError
		switch {
		case !supports(dequantTypes, dt):
			if !errors.As(err, &ue) {
				t.Fatalf("%v: err = %v, want UnsupportedDTypeError", dt, err)
			}
		case serr != nil || want != int64(len(src)):
			if !errors.Is(err, ErrBufferSize) {
				t.Fatalf("%v: %d bytes for %d elements: err = %v, want ErrBufferSize", dt, len(src), n, err)
			}
		case err != nil:
			t.Fatalf("%v: %d bytes for %d elements: %v", dt, len(src), n, err)
		}
	})
}

// FuzzQuantize: any float32 values (NaN and Inf included) quantise without
// panicking, deterministically, and dequantise again.
func FuzzQuantize(f *testing.F) {
	for _, dt := range quantTypes {
		f.Add(uint8(dt), make([]byte, 4*32))
		f.Add(uint8(dt), seq(4*32, func(i int) byte { return byte(i * 37) }))
	}
	f.Fuzz(func(t *testing.T, dtb uint8, raw []byte) {
		dt := DType(dtb)
		x := floats(raw)
		n, serr := dt.Bytes(int64(len(x)))
		if serr != nil {
			n = 0
		}
		dst := make([]byte, n)
		err := Quantize(dt, x, dst)
		switch {
		case !supports(quantTypes, dt):
			var ue *UnsupportedDTypeError
			if !errors.As(err, &ue) {
				t.Fatalf("%v: err = %v, want UnsupportedDTypeError", dt, err)
			}
			return
		case serr != nil:
			if !errors.Is(err, ErrBufferSize) {
				t.Fatalf("%v: %d elements: err = %v, want ErrBufferSize", dt, len(x), err)
			}
			return
		case err != nil:
			t.Fatal(err)
		}
		again := make([]byte, n)
		if err := Quantize(dt, x, again); err != nil || string(again) != string(dst) {
			t.Fatalf("%v: not deterministic (%v)", dt, err)
		}
		if err := Dequantize(dt, dst, make([]float32, len(x))); err != nil {
			t.Fatal(err)
		}
	})
}

// BenchmarkDequantize/<type>: MB/s counts the stored (source) bytes.
func BenchmarkDequantize(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(7, 8))
	for _, dt := range dequantTypes {
		b.Run(dt.String(), func(b *testing.B) {
			src, dst := randomData(dt, n, r), make([]float32, n)
			b.SetBytes(int64(len(src)))
			for b.Loop() {
				if err := Dequantize(dt, src, dst); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/n, "ns/elem")
		})
	}
}

// BenchmarkQuantize/<type>: MB/s counts the float32 input bytes.
func BenchmarkQuantize(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(9, 10))
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, dt := range quantTypes {
		b.Run(dt.String(), func(b *testing.B) {
			size, _ := dt.Bytes(n)
			dst := make([]byte, size)
			b.SetBytes(4 * n)
			for b.Loop() {
				if err := Quantize(dt, x, dst); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
