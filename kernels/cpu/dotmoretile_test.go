package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/vkllm/vkllm/tensor"
)

// TestMoreTilesBitwise: the fast MatMul of dotmore.go's types and Q6_K,
// whose prefill goes by moreTile's tiles where SIMD has them, gives
// every value bitwise the one-row kernel's (q8Dot, dotQ6_K) on its
// pair, at 1 and 3 threads, row lengths of one block and several, and
// activation row counts that leave tiles part full (decode; 4, 9 and
// 13: fours, then the rest one by one; past one xTile). A dtype the
// packed set in use packs (IQ4_NL, IQ4_XS with AVX-512 VNNI) takes the
// packed kernels instead (TestPackedKernelsBitwise).
func TestMoreTilesBitwise(t *testing.T) {
	t.Logf("kernels: %s", SIMD())
	moreTilesBitwise(t)
}

func moreTilesBitwise(t *testing.T) {
	for _, dt := range append(moreTypes[:len(moreTypes):len(moreTypes)], tensor.Q6_K) {
		if _, ok := moreTile(dt); hasAVX2 && !ok {
			t.Errorf("%v: no prefill tile", dt)
		}
		if x1, _ := packedKernels(dt); x1 != nil {
			t.Logf("%v: packed (%s set), no tiles", dt, packed.name)
			continue
		}
		kind, _ := moreTileKindOf(dt)
		ks := []int{32, 96, 896}
		if dt.BlockSize() == 256 {
			ks = []int{256, 1024}
		}
		for _, threads := range []int{1, 3} {
			be := New(threads)
			for _, k := range ks {
				m := 11
				for _, random := range []bool{false, true} {
					w, data := upload(t, be, dt, m, k)
					if random { // random bytes, random f16 scales (upload's quantiser makes some powers of two)
						data = randomBlocks(rand.New(rand.NewPCG(uint64(k), 9)), dt, m*k/dt.BlockSize())
						var err error
						if w, err = be.Upload(tensor.Tensor{Name: "w", DType: dt, Shape: []int64{int64(m), int64(k)}, Data: data}); err != nil {
							t.Fatal(err)
						}
					}
					for _, n := range []int{1, 4, 9, 13, 70} {
						r := rand.New(rand.NewPCG(uint64(k), uint64(n)))
						xs := make([]float32, n*k)
						for i := range xs {
							xs[i] = float32(r.NormFloat64())
						}
						x, _ := be.NewTensor(tensor.F32, n, k)
						d, _ := be.NewTensor(tensor.F32, n, m)
						if err := be.SetF32(x, xs); err != nil {
							t.Fatal(err)
						}
						be.MatMul(d, x, w)
						got := make([]float32, n*m)
						if err := be.GetF32(d, got); err != nil {
							t.Fatal(err)
						}
						nb, rb := k/32, len(data)/m
						qx, dx, sx := make([]int8, k), make([]float32, nb), make([]float32, nb)
						bad := 0
						for i := range n {
							quantizeQ8(xs[i*k:(i+1)*k], qx, dx, sx)
							for j := range m {
								want := kind.one(data[j*rb:(j+1)*rb], qx, dx, sx)
								if math.Float32bits(got[i*m+j]) != math.Float32bits(want) && bad < 3 {
									bad++
									t.Errorf("%v threads=%d k=%d n=%d random=%v: [%d, %d] = %v, one-row %v", dt, threads, k, n, random, i, j, got[i*m+j], want)
								}
							}
						}
					}
				}
			}
			be.Close()
		}
	}
}

// TestMoreUnpack: each unpacker's row (values, scales, d_b and the
// minima) gives back tensor.Dequantize's weights within float32
// rounding: the tile's operands are the weight's, whatever the kernel
// does with them.
func TestMoreUnpack(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 7))
	for _, c := range append(moreCases[:len(moreCases):len(moreCases)], moreCase{tensor.Q6_K, dotQ6_KGo, []int{208}}) {
		kind, ok := moreTileKindOf(c.dt)
		if !ok {
			t.Fatalf("%v: no unpacker", c.dt)
		}
		for _, blocks := range []int{1, 3} {
			w, _, _, _, _, _ := moreRow(t, r, c, blocks)
			k := blocks * c.dt.BlockSize()
			nb := k / 32
			want := make([]float32, k)
			if err := tensor.Dequantize(c.dt, w, want); err != nil {
				t.Fatal(err)
			}
			var u unpackedRow
			u.carve(make([]float32, moreTileFloats(k)), nb)
			kind.unpack(w, &u)
			for e := range k {
				b := e / 32
				sc := int16(u.q[64*b+32+2*(e%32/16*8)]) | int16(u.q[64*b+33+2*(e%32/16*8)])<<8
				v := float64(u.d[b]) * float64(sc) * float64(int8(u.q[64*b+e%32]))
				switch kind.mins {
				case minsBlock:
					v += float64(u.m[b])
				case minsLanes:
					v -= float64(u.dm[b/8]) * float64(u.m[b])
				case minsRow:
					sc2 := int16(u.q2[64*b+32+2*(e%32/16*8)])
					v -= float64(u.d2[b]) * float64(sc2) * float64(int8(u.q2[64*b+e%32]))
				}
				if math.Abs(v-float64(want[e])) > 1e-6*math.Abs(float64(want[e]))+1e-12 {
					t.Errorf("%v block %d value %d: unpacked %v, dequantised %v", c.dt, b, e%32, v, want[e])
					break
				}
			}
		}
	}
}

// randomBlocks is blocks random blocks of dt with small random f16
// scales (moreCases' offsets; Q6_K's d at 208).
func randomBlocks(r *rand.Rand, dt tensor.DType, blocks int) []byte {
	halves := map[tensor.DType][]int{tensor.Q6_K: {208}}[dt]
	for _, c := range moreCases {
		if c.dt == dt {
			halves = c.halves
		}
	}
	bb := dt.BlockBytes()
	w := make([]byte, blocks*bb)
	for i := range w {
		w[i] = byte(r.Uint32())
	}
	for b := range blocks {
		for _, o := range halves {
			w[b*bb+o], w[b*bb+o+1] = byte(r.Uint32()), 0x14|byte(r.Uint32()&3)
		}
	}
	return w
}
