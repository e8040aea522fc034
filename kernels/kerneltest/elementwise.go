package kerneltest

import (
	"math"
	"testing"

	"github.com/vkllm/vkllm/kernels"
	"github.com/vkllm/vkllm/tensor"
)

// shapes are the (n, m) of the element-wise tests.
var shapes = [][2]int{{1, 1}, {3, 37}, {17, 64}}

// Add checks dst = a + b with b of a's shape and b a row broadcast over
// a's rows, and dst aliasing a.
func Add(t *testing.T, b kernels.Backend) {
	binaryOp(t, b, "Add", b.Add, func(x, y float64) float64 { return x + y })
}

// Mul checks dst = a * b as Add does.
func Mul(t *testing.T, b kernels.Backend) {
	binaryOp(t, b, "Mul", b.Mul, func(x, y float64) float64 { return x * y })
}

func binaryOp(t *testing.T, b kernels.Backend, name string, op func(dst, a, c kernels.Tensor), ref func(x, y float64) float64) {
	r := rng(30)
	for _, s := range shapes {
		n, m := s[0], s[1]
		for _, broadcast := range []bool{false, true} {
			for _, alias := range []bool{false, true} {
				x := randn(r, n*m, 1)
				by, bshape := randn(r, n*m, 1), []int{n, m}
				if broadcast {
					by, bshape = randn(r, m, 1), []int{m}
				}
				xa := newF32(t, b, x, n, m)
				d := xa
				if !alias {
					d = newF32(t, b, nil, n, m)
				}
				op(d, xa, newF32(t, b, by, bshape...))
				want := make([]float64, n*m)
				for i := range want {
					want[i] = ref(float64(x[i]), float64(by[i%len(by)]))
				}
				what := name + " " + shapeName(n, m) + " by " + shapeName(bshape...)
				if alias {
					what += " into a"
				}
				check(t, what, read(t, b, d, n*m), want, LimitExact)
			}
		}
	}
}

// SwiGLU checks silu(gate)·up, with gates reaching ±100 (where e^−g
// overflows float32) and dst aliasing gate.
func SwiGLU(t *testing.T, b kernels.Backend) {
	r := rng(31)
	for _, s := range shapes {
		n, m := s[0], s[1]
		for _, alias := range []bool{false, true} {
			g, u := randn(r, n*m, 4), randn(r, n*m, 1)
			if len(g) > 2 {
				g[0], g[1] = -100, 100
			}
			gt := newF32(t, b, g, n, m)
			d := gt
			if !alias {
				d = newF32(t, b, nil, n, m)
			}
			b.SwiGLU(d, gt, newF32(t, b, u, n, m))
			want := make([]float64, n*m)
			for i := range want {
				x := float64(g[i])
				want[i] = x / (1 + math.Exp(-x)) * float64(u[i])
			}
			check(t, "SwiGLU "+shapeName(n, m), read(t, b, d, n*m), want, LimitMath)
		}
	}
}

// RMSNorm checks x / sqrt(mean(x²) + eps) · w over odd widths, with a row
// of zeros and dst aliasing x.
func RMSNorm(t *testing.T, b kernels.Backend) {
	r := rng(32)
	const eps = 1e-6
	for _, dim := range []int{1, 7, 96, 896} {
		for _, alias := range []bool{false, true} {
			n := 3
			x, w := randn(r, n*dim, 2), randn(r, dim, 1)
			clear(x[dim : 2*dim]) // row 1 is zeros: the output is zeros
			xt := newF32(t, b, x, n, dim)
			d := xt
			if !alias {
				d = newF32(t, b, nil, n, dim)
			}
			b.RMSNorm(d, xt, newF32(t, b, w, dim), eps)
			want := make([]float64, n*dim)
			for i := range n {
				var ss float64
				for _, v := range x[i*dim : (i+1)*dim] {
					ss += float64(v) * float64(v)
				}
				inv := 1 / math.Sqrt(ss/float64(dim)+float64(float32(eps)))
				for j := range dim {
					want[i*dim+j] = float64(x[i*dim+j]) * inv * float64(w[j])
				}
			}
			check(t, "RMSNorm "+shapeName(n, dim), read(t, b, d, n*dim), want, LimitMath)
		}
	}
}

// Softmax checks rows of plain values, values near 100 (e^x overflows
// float32 without the max subtracted), a row with −Inf holes and a row of
// only −Inf (zeros).
func Softmax(t *testing.T, b kernels.Backend) {
	r := rng(33)
	inf := float32(math.Inf(-1))
	for _, m := range []int{1, 29, 1000} {
		n := 5
		x := randn(r, n*m, 3)
		for j := range m {
			x[m+j] += 100
			if j%3 == 1 {
				x[2*m+j] = inf
			}
			x[3*m+j] = inf
		}
		xt := newF32(t, b, x, n, m)
		b.Softmax(xt)
		want := make([]float64, n*m)
		for i := range n {
			row, out := x[i*m:(i+1)*m], want[i*m:(i+1)*m]
			mx := math.Inf(-1)
			for _, v := range row {
				mx = math.Max(mx, float64(v))
			}
			if math.IsInf(mx, -1) {
				continue // zeros
			}
			var sum float64
			for j, v := range row {
				out[j] = math.Exp(float64(v) - mx)
				sum += out[j]
			}
			for j := range out {
				out[j] /= sum
			}
		}
		check(t, "Softmax "+shapeName(n, m), read(t, b, xt, n*m), want, LimitMath)
	}
}

// Argmax checks the index of each row's largest value, the first one on
// ties, in random rows with planted ties, −Inf and a maximum at either end.
func Argmax(t *testing.T, b kernels.Backend) {
	r := rng(34)
	for _, m := range []int{1, 2, 37, 5000} {
		n := 6
		x := randn(r, n*m, 1)
		if m > 2 {
			x[0*m+5%m], x[0*m+m-1] = 9, 9 // tie: the first wins
			x[1*m+0] = 9                  // first element
			x[2*m+m-1] = 9                // last element
			for j := range m {            // row 3: −Inf with one finite value
				x[3*m+j] = float32(math.Inf(-1))
			}
			x[3*m+m/2] = -1e30
			x[4*m+1], x[4*m+2] = float32(math.Inf(1)), float32(math.Inf(1))
		}
		d, err := b.NewTensor(tensor.I32, n)
		if err != nil {
			t.Fatal(err)
		}
		b.Argmax(d, newF32(t, b, x, n, m))
		got := make([]int32, n)
		if err := b.GetI32(d, got); err != nil {
			t.Fatal(err)
		}
		b.Free(d)
		for i := range n {
			best := 0
			for j, v := range x[i*m : (i+1)*m] {
				if v > x[i*m+best] {
					best = j
				}
			}
			if got[i] != int32(best) {
				t.Errorf("Argmax (%d, %d) row %d = %d, want %d", n, m, i, got[i], best)
			}
		}
	}
}
