#version 450
// The activations of an int8 MatMul (matmul.comp's INT8 variants)
// quantised to 8 bits in blocks of 32 consecutive elements of a row: one
// invocation a block, so a block's bits depend on its 32 values alone
// (batch invariance). The rule is kerneltest.QuantizeQ8's (the CPU
// backend's): d = max|x| / 127 in float32, id = 1/d (0 when d = 0), q =
// x·id rounded to float32, then to the nearest integer with halves away
// from zero; and the block's integer sum Σq, for the weight types whose
// offset multiplies it (Q4_1's m, the K-quants' mins).
//
// Q (uint words), for nb = blocks in all: the blocks' q, four to a word
// (little-endian bytes), words [8b, 8b+8) for block b; then d as float
// bits at word 8·nb + b; then Σq at word 9·nb + b.
#include "common/base.glsl"

layout(binding = 0) readonly buffer XB { vec4 x4[]; };
layout(binding = 1) writeonly buffer QB { uint Q[]; };

layout(push_constant) uniform PC {
	uint blocks;
} pc;

// roundAway is p rounded to the nearest integer, halves away from zero
// (p − trunc(p) is exact).
float roundAway(float p) {
	float t = trunc(p);
	precise float f = p - t;
	return abs(f) >= 0.5 ? t + sign(p) : t;
}

void main() {
	uint b = globalIndex();
	if (b >= pc.blocks) return;
	vec4 v[8];
	float amax = 0.0;
	for (uint i = 0u; i < 8u; i++) {
		v[i] = x4[8u * b + i];
		vec4 a = abs(v[i]);
		amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
	}
	precise float d = amax / 127.0;
	precise float id = d != 0.0 ? 1.0 / d : 0.0;
	int sum = 0;
	for (uint i = 0u; i < 8u; i++) {
		uint w = 0u;
		for (uint e = 0u; e < 4u; e++) {
			precise float p = v[i][e] * id;
			int q = clamp(int(roundAway(p)), -127, 127);
			sum += q;
			w |= (uint(q) & 0xFFu) << (8u * e);
		}
		Q[8u * b + i] = w;
	}
	Q[8u * pc.blocks + b] = floatBitsToUint(d);
	Q[9u * pc.blocks + b] = uint(sum);
}
