package cpubase

// Dot is the one dot product of MatMul and Attention: eight float32
// partial sums, lane l taking the elements i ≡ l (mod 8), then added
// pairwise. Each product is rounded to float32 before it is added (the
// conversion stops the compiler from fusing a multiply-add on arm64 or
// GOAMD64=v3), so a result depends only on a and b: not on the batch,
// the thread count or the machine. It is also the order an 8-wide SIMD
// loop without FMA produces.
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s [8]float32
	n := len(a) &^ 7
	for i := 0; i < n; i += 8 {
		s[0] += float32(a[i] * b[i])
		s[1] += float32(a[i+1] * b[i+1])
		s[2] += float32(a[i+2] * b[i+2])
		s[3] += float32(a[i+3] * b[i+3])
		s[4] += float32(a[i+4] * b[i+4])
		s[5] += float32(a[i+5] * b[i+5])
		s[6] += float32(a[i+6] * b[i+6])
		s[7] += float32(a[i+7] * b[i+7])
	}
	for i := n; i < len(a); i++ {
		s[i-n] += float32(a[i] * b[i])
	}
	return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]))
}
