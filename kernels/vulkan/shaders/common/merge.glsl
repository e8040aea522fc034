// The merge of attention segments' (M, l, acc), shared by
// attention_combine.comp and attention_prefill.comp (see attention.glsl).

#define NEG uintBitsToFloat(0xFF800000u)

// mergeWeights gives the weights of a running merge at max m and of a
// segment at max ms, and the new max mn. The first segment (m = −Inf)
// is copied, not weighted (callers test m == NEG), so a list of one
// segment ends exactly as the unsplit online softmax.
void mergeWeights(float m, float ms, out float wa, out float wb, out float mn) {
	mn = max(m, ms);
	precise float da = m - mn;
	precise float db = ms - mn;
	precise float ea = exp(da);
	precise float eb = exp(db);
	wa = ea;
	wb = eb;
}

// mergeAdd returns x·wa + y·wb, rounded after each operation.
float mergeAdd(float x, float wa, float y, float wb) {
	precise float a = x * wa;
	precise float b = y * wb;
	precise float r = a + b;
	return r;
}
