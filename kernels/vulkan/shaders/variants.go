// Package shaders holds kernels/vulkan's GLSL compute shaders, the table
// of their variants, and the SPIR-V that `go generate` compiles from them
// with glslc (committed, embedded: users need no shader compiler).
//
// A variant is one .comp file compiled with a set of #defines. Names
// follow op_<src>_<dst>[_fp16][_subgroup]: _fp16 computes its dot
// products in half precision (shaderFloat16), _subgroup reduces with
// subgroup arithmetic.
package shaders

//go:generate go run gen.go

import (
	"embed"
	"fmt"
	"os"
	"slices"
)

// Variant is one compiled shader.
type Variant struct {
	Name    string   // the .spv's base name
	Source  string   // the .comp file
	Defines []string // NAME or NAME=VALUE, passed as -D
	// Coop: the shader uses GL_KHR_cooperative_matrix, which needs a
	// newer glslc than Debian 12's (see Glslc).
	Coop bool
	// IntDot: the shader uses GL_EXT_integer_dot_product, which needs
	// the same newer glslc.
	IntDot bool
}

// Weight dtypes with GetRows and MatMul shaders, as the TYPE_ suffix.
var weightTypes = []string{"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q3_K", "Q4_K", "Q5_K", "Q6_K"}

// FP16Types are the weight dtypes whose MatMul kernels have _fp16
// variants (the float16-exact F16 and the quants read a group at a time).
var FP16Types = []string{"F16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q6_K"}

// TiledTypes are the weight dtypes with a tiled prefill kernel
// (matmul_mm_*).
var TiledTypes = []string{"F32", "F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q6_K"}

// Int8Types are the weight dtypes whose MatMul has int8 variants
// (matmul.comp's INT8: integer dots against activations quantised by
// quantize_q8.comp): matmul_<type>_f32_int8 with plain int arithmetic,
// _int8dot with GL_EXT_integer_dot_product, each also _subgroup.
var Int8Types = []string{"Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q5_K", "Q6_K"}

// CoopTypes are the weight dtypes with a cooperative-matrix kernel
// (matmul_coop_*): the tiled kernel's but F32, whose weights keep the
// exact float32 kernels (llama.cpp keeps them in float32 too).
var CoopTypes = []string{"F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q4_K", "Q6_K"}

// Variants lists every shader variant.
var Variants = func() []Variant {
	var v []Variant
	add := func(name, src string, defs ...string) {
		v = append(v, Variant{Name: name, Source: src, Defines: defs})
	}
	for _, t := range weightTypes {
		lt := lower(t)
		add("get_rows_"+lt+"_f32", "get_rows.comp", "TYPE_"+t)
		add("matmul_"+lt+"_f32", "matmul.comp", "TYPE_"+t)
		add("matmul_"+lt+"_f32_subgroup", "matmul.comp", "TYPE_"+t, "SUBGROUP")
	}
	for _, t := range FP16Types {
		lt := lower(t)
		add("matmul_"+lt+"_f32_fp16", "matmul.comp", "TYPE_"+t, "FP16")
		add("matmul_"+lt+"_f32_fp16_subgroup", "matmul.comp", "TYPE_"+t, "FP16", "SUBGROUP")
	}
	for _, t := range Int8Types {
		lt := lower(t)
		for _, dot := range []bool{false, true} {
			name, defs := "matmul_"+lt+"_f32_int8", []string{"TYPE_" + t, "INT8"}
			if dot {
				name, defs = name+"dot", append(defs, "INTDOT")
			}
			add(name, "matmul.comp", defs...)
			add(name+"_subgroup", "matmul.comp", append(defs, "SUBGROUP")...)
			v[len(v)-2].IntDot, v[len(v)-1].IntDot = dot, dot
		}
	}
	add("quantize_q8_f32", "quantize_q8.comp")
	// The gate/up matvec with SwiGLU fused (matmul.comp's GATEUP): each
	// matmul_ variant above with _swiglu after its name.
	for _, m := range v {
		if m.Source == "matmul.comp" {
			add(m.Name+"_swiglu", "matmul.comp", append(slices.Clip(m.Defines), "GATEUP")...)
			v[len(v)-1].IntDot = m.IntDot
		}
	}
	for _, t := range TiledTypes {
		lt := lower(t)
		add("matmul_mm_"+lt+"_f32", "matmul_mm.comp", "TYPE_"+t)
		add("matmul_mm_"+lt+"_f32_subgroup", "matmul_mm.comp", "TYPE_"+t, "SUBGROUP")
		if slices.Contains(FP16Types, t) {
			add("matmul_mm_"+lt+"_f32_fp16", "matmul_mm.comp", "TYPE_"+t, "FP16")
			add("matmul_mm_"+lt+"_f32_fp16_subgroup", "matmul_mm.comp", "TYPE_"+t, "FP16", "SUBGROUP")
		}
	}
	for _, t := range CoopTypes {
		lt := lower(t)
		add("matmul_coop_"+lt+"_f32", "matmul_coop.comp", "TYPE_"+t)
		v[len(v)-1].Coop = true
	}
	add("add_f32", "binary.comp", "OP_ADD")
	add("swiglu_f32", "binary.comp", "OP_SWIGLU")
	for _, op := range []struct{ name, def string }{{"rms_norm", "NORM"}, {"add_rms_norm", "ADD"}} {
		for _, vec := range []struct{ suffix, def string }{{"_f32", "SCALAR"}, {"_f32_vec4", "VEC4"}} {
			add(op.name+vec.suffix, "rms_norm.comp", op.def, vec.def)
			add(op.name+vec.suffix+"_subgroup", "rms_norm.comp", op.def, vec.def, "SUBGROUP")
		}
	}
	add("rope_f32", "rope.comp")
	add("kv_shift_f32", "rope.comp", "KVSHIFT")
	add("kv_shift_f16", "rope.comp", "KVSHIFT", "CACHE_F16")
	add("rope_kv_f32", "rope.comp", "ROPE_KV")
	add("rope_kv_f16", "rope.comp", "ROPE_KV", "CACHE_F16")
	add("kv_write_f32", "kv_write.comp")
	add("kv_write_f16", "kv_write.comp", "CACHE_F16")
	for _, c := range []struct{ name, def string }{{"f32", ""}, {"f16", "CACHE_F16"}} {
		for _, v4 := range []string{"", "_v4"} {
			defs := []string{}
			if c.def != "" {
				defs = append(defs, c.def)
			}
			if v4 != "" {
				defs = append(defs, "VEC4")
			}
			with := func(d ...string) []string { return append(append([]string(nil), defs...), d...) }
			add("attention_"+c.name+v4, "attention.comp", defs...)
			add("attention_"+c.name+v4+"_subgroup", "attention.comp", with("SUBGROUP")...)
			add("attention_split_"+c.name+v4, "attention.comp", with("SPLIT")...)
			add("attention_split_"+c.name+v4+"_subgroup", "attention.comp", with("SPLIT", "SUBGROUP")...)
			add("attention_prefill_"+c.name+v4, "attention_prefill.comp", defs...)
		}
	}
	add("attention_combine_f32", "attention_combine.comp")
	// The probe's kernels (kernels/vulkan/probe.go), never run by an op:
	// the streaming read, and matmul.comp's ablations and old kernel for
	// Q4_0 in each arithmetic MatMul may run (ProbeAblations).
	add("probe_read", "probe_read.comp")
	add("probe_read_chain", "probe_read.comp", "CHAIN")
	for _, a := range ProbeAblations {
		for _, fp := range []string{"", "_fp16"} {
			for _, sg := range []string{"", "_subgroup"} {
				defs := []string{"TYPE_Q4_0"}
				if fp != "" {
					defs = append(defs, "FP16")
				}
				if sg != "" {
					defs = append(defs, "SUBGROUP")
				}
				src := "matmul.comp"
				if a.Define == "" {
					src = "probe_old_matmul.comp"
				} else {
					defs = append(defs, a.Define)
				}
				add("probe_"+a.Name+"_matmul_q4_0_f32"+fp+sg, src, defs...)
			}
		}
	}
	return v
}()

// ProbeAblation is one of the probe's variants of the Q4_0 matrix-vector
// kernel: matmul.comp with Define (one construct taken out), or with no
// Define the kernel of commit 173338e (probe_old_matmul.comp). Each is
// compiled as probe_<Name>_matmul_q4_0_f32[_fp16][_subgroup].
type ProbeAblation struct{ Name, Define string }

// ProbeAblations are the probe's kernel variants, in its table's order.
var ProbeAblations = []ProbeAblation{
	{"scalarx", "PROBE_SCALAR_X"},
	{"now4", "PROBE_NO_W4"},
	{"noprecise", "PROBE_NO_PRECISE"},
	{"const", "PROBE_CONST"},
	{"nounroll", "PROBE_NO_UNROLL"},
	{"old", ""},
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Glslc is the compiler of v: glslc on the PATH, except for the
// cooperative-matrix variants, which need GL_KHR_cooperative_matrix
// (shaderc 2023.8 or later; Debian 12's 2023.2 lacks it), and the
// integer-dot ones, which need GL_EXT_integer_dot_product: $VKLLM_GLSLC
// when set, else glslc. The committed .spv of those come from Debian
// 13's glslc (shaderc 2025.2), which tools/lavapipe-coopmat.sh provides:
//
//	eval "$(tools/lavapipe-coopmat.sh | tail -n1)"; go generate ./kernels/vulkan/shaders
//
// Every other variant keeps Debian 12's glslc, so its .spv does not
// change with the compiler that builds the cooperative ones.
func Glslc(v Variant) string {
	if g := os.Getenv("VKLLM_GLSLC"); (v.Coop || v.IntDot) && g != "" {
		return g
	}
	return "glslc"
}

// GlslcArgs are the glslc arguments that compile v (paths relative to
// this directory) into out.
func GlslcArgs(v Variant, out string) []string {
	args := []string{"-O", "--target-env=vulkan1.2", "-fshader-stage=compute"}
	for _, d := range v.Defines {
		args = append(args, "-D"+d)
	}
	return append(args, "-o", out, v.Source)
}

//go:embed spv
var spv embed.FS

// SPIRV returns the compiled code of the named variant.
func SPIRV(name string) ([]byte, error) {
	b, err := spv.ReadFile("spv/" + name + ".spv")
	if err != nil {
		return nil, fmt.Errorf("shaders: no variant %q: %w", name, err)
	}
	return b, nil
}
