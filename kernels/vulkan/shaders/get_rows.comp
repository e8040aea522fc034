#version 450
// GetRows: dst (n, cols) F32 = rows ids[i] of a table, for the table rows
// [rowLo, rowLo+rows) held by this binding (a chunk of a split weight).
// One invocation per element; x over columns, y over ids (z spreads y).
#include "common/base.glsl"

layout(binding = 0) readonly buffer WB { uint W[]; };
layout(binding = 0) readonly buffer WB4 { uvec4 W4[]; }; // W, 16 bytes at a time
layout(binding = 1) readonly buffer IB { int ids[]; };
layout(binding = 2) writeonly buffer DB { float dst[]; };

layout(push_constant) uniform PC {
	uint cols, n, rowLo, rows, rowBytes;
} pc;

#include "common/weights.glsl"

void main() {
	uint c = gl_GlobalInvocationID.x;
	uint i = gl_WorkGroupID.z * gl_NumWorkGroups.y + gl_WorkGroupID.y;
	if (c >= pc.cols || i >= pc.n) return;
	int r = ids[i] - int(pc.rowLo);
	if (r < 0 || r >= int(pc.rows)) return;
	dst[i * pc.cols + c] = weightAt(uint(r) * pc.rowBytes, c);
}
