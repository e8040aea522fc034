// SwiGLU of one element, silu(g)·u, in the steps every kernel takes
// (binary.comp's OP_SWIGLU and matmul.comp's GATEUP epilogue): precise,
// so no compiler contracts or reorders them and the fused matvec is
// bitwise the unfused composition.
float swiglu(float g, float u) {
	precise float e = 1.0 + exp(-g);
	precise float silu = g / e;
	precise float y = silu * u;
	return y;
}
