package kerneltest

import (
	"math"
	"testing"

	"github.com/vkllm/vkllm/kernels"
)

// shapes are the (n, m) of the element-wise tests.
var shapes = [][2]int{{1, 1}, {3, 37}, {17, 64}}

// Add checks dst = a + b with b of a's shape and b a row broadcast over
// a's rows, and dst aliasing a.
func Add(t *testing.T, b kernels.Backend) {
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
				b.Add(d, xa, newF32(t, b, by, bshape...))
				want := make([]float64, n*m)
				for i := range want {
					want[i] = float64(x[i]) + float64(by[i%len(by)])
				}
				what := "Add " + shapeName(n, m) + " by " + shapeName(bshape...)
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
