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

// normDims are RMSNorm's row lengths: odd ones, multiples of 4, and rows
// of 2048 or more (where a backend may use wider workgroups).
var normDims = []int{1, 7, 96, 896, 2051, 2052}

// RMSNorm checks x / sqrt(mean(x²) + eps) · w over odd widths, with a row
// of zeros and dst aliasing x.
func RMSNorm(t *testing.T, b kernels.Backend) {
	r := rng(32)
	const eps = 1e-6
	for _, dim := range normDims {
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

// AddRMSNorm checks kernels.AddRMSNorm (the backend's fused op where it
// is a kernels.AddRMSNormer): sum = a + b within LimitExact, dst =
// RMSNorm(sum) within LimitMath, both bitwise what Add then RMSNorm give
// on the same backend, with sum separate or aliasing a or b, and dst
// separate or aliasing sum (the decoder's last layer).
func AddRMSNorm(t *testing.T, b kernels.Backend) {
	r := rng(33)
	const eps = 1e-5
	const n = 3
	for _, dim := range normDims {
		for _, alias := range []string{"", "sum=a", "sum=b", "sum=a,dst=sum"} {
			x, y, w := randn(r, n*dim, 2), randn(r, n*dim, 1), randn(r, dim, 1)
			for j := range dim { // row 1 sums to zeros
				y[dim+j] = -x[dim+j]
			}
			xt, yt := newF32(t, b, x, n, dim), newF32(t, b, y, n, dim)
			sum, dst := newF32(t, b, nil, n, dim), newF32(t, b, nil, n, dim)
			switch alias {
			case "sum=a":
				sum = xt
			case "sum=b":
				sum = yt
			case "sum=a,dst=sum":
				sum, dst = xt, xt
			}
			wt := newF32(t, b, w, dim)
			kernels.AddRMSNorm(b, sum, dst, xt, yt, wt, eps)
			gotSum, gotDst := read(t, b, sum, n*dim), read(t, b, dst, n*dim)

			// The composition on fresh tensors.
			s2, d2 := newF32(t, b, nil, n, dim), newF32(t, b, nil, n, dim)
			b.Add(s2, newF32(t, b, x, n, dim), newF32(t, b, y, n, dim))
			b.RMSNorm(d2, s2, wt, eps)
			wantSum, wantDst := read(t, b, s2, n*dim), read(t, b, d2, n*dim)

			what := "AddRMSNorm " + shapeName(n, dim)
			if alias != "" {
				what += " " + alias
			}
			ref := make([]float64, n*dim)
			for i := range ref {
				ref[i] = float64(x[i]) + float64(y[i])
			}
			if alias != "sum=a,dst=sum" {
				check(t, what+" sum", gotSum, ref, LimitExact)
			}
			for i := range n {
				var ss float64
				for _, v := range wantSum[i*dim : (i+1)*dim] {
					ss += float64(v) * float64(v)
				}
				inv := 1 / math.Sqrt(ss/float64(dim)+float64(float32(eps)))
				for j := range dim {
					ref[i*dim+j] = float64(wantSum[i*dim+j]) * inv * float64(w[j])
				}
			}
			check(t, what, gotDst, ref, LimitMath)
			for i := range gotDst {
				if alias != "sum=a,dst=sum" && math.Float32bits(gotSum[i]) != math.Float32bits(wantSum[i]) {
					t.Fatalf("%s: sum[%d] = %v, Add gives %v", what, i, gotSum[i], wantSum[i])
				}
				if math.Float32bits(gotDst[i]) != math.Float32bits(wantDst[i]) {
					t.Fatalf("%s: dst[%d] = %v, Add then RMSNorm give %v", what, i, gotDst[i], wantDst[i])
				}
			}
		}
	}
}
