//go:build cgo

package vulkan

import (
	"github.com/vkllm/vkllm/tensor"
)

// The repacked layout of a quantised weight (shaders/common/weights.glsl's
// REPACK). In the file layout a Q4_0 block is 18 bytes (a half d, then 16
// bytes of nibbles), so a group's quants sit at 2-byte alignment and a
// lane reads them with unaligned 32-bit loads and shifts. Repacked, each
// run of repackRun blocks of a row holds their quant arrays first (16
// bytes a Q4 block, 32 a Q8_0 one, each 16-byte aligned when the row
// is) and then their scales (d, or d and m): a lane loads a group's quants
// with one (two for Q8_0) 16-byte load and its scales with one aligned
// 32-bit load. A run is as many bytes as its blocks in the file, so a
// row, a part of rows and the whole tensor keep their sizes and offsets;
// only bytes move within each run, and every reader computes the same
// floats from them. Q6_K is the same with its 208 bytes of quants and
// sub-block scales as the body and its d as the head.
//
// A weight is repacked at Upload when the device's tuning says so for its
// dtype (key "layout/<dtype>", knob "repack") and Config.NoRepack is not
// set, and when its rows are whole runs (a multiple of 256 elements,
// 2048 for Q6_K), so that every row (rowBytes a multiple of 16) starts
// 16-byte aligned.

// packing is a repackable dtype's block: head bytes of scales and body
// bytes of quants, the head first in the file unless last.
type packing struct {
	head, body int
	last       bool
}

// packings are the dtypes with a repacked layout. Q4_K's quants already
// sit 16-byte aligned in its 144-byte blocks (its reader loads aligned
// words); Q5_K's too.
var packings = map[tensor.DType]packing{
	tensor.Q8_0: {head: 2, body: 32},
	tensor.Q4_0: {head: 2, body: 16},
	tensor.Q4_1: {head: 4, body: 16},
	tensor.Q6_K: {head: 2, body: 208, last: true}, // ql, qh, scales; then d
}

// repackRun is the blocks of one run: 8 blocks of any packing are a
// multiple of 16 bytes (144, 160, 272, 1680).
const repackRun = 8

// RepackDTypes lists the dtypes that have a repacked layout.
func RepackDTypes() []tensor.DType {
	var out []tensor.DType
	for _, dt := range weightDTypes {
		if _, ok := packings[dt]; ok {
			out = append(out, dt)
		}
	}
	return out
}

// repackable reports whether rows of cols elements of dt can be repacked.
func repackable(dt tensor.DType, cols int) bool {
	_, ok := packings[dt]
	return ok && cols > 0 && cols%(repackRun*dt.BlockSize()) == 0
}

// repack writes src (whole runs in the file layout) to dst in the
// repacked layout; len(dst) == len(src).
func repack(dt tensor.DType, dst, src []byte) {
	p := packings[dt]
	bs := p.head + p.body
	for r := 0; r+repackRun*bs <= len(src); r += repackRun * bs {
		for i := range repackRun {
			head, body := p.split(src[r+i*bs : r+(i+1)*bs])
			copy(dst[r+i*p.body:], body)
			copy(dst[r+repackRun*p.body+i*p.head:], head)
		}
	}
}

// unpack is repack's inverse.
func unpack(dt tensor.DType, dst, src []byte) {
	p := packings[dt]
	bs := p.head + p.body
	for r := 0; r+repackRun*bs <= len(src); r += repackRun * bs {
		for i := range repackRun {
			head, body := p.split(dst[r+i*bs : r+(i+1)*bs])
			copy(body, src[r+i*p.body:r+(i+1)*p.body])
			copy(head, src[r+repackRun*p.body+i*p.head:])
		}
	}
}

// split returns a block's head and body.
func (p packing) split(blk []byte) (head, body []byte) {
	if p.last {
		return blk[p.body:], blk[:p.body]
	}
	return blk[:p.head], blk[p.head:]
}

// repackDetect lists the dtypes Upload repacks (DeviceInfo.Repacked):
// those whose "layout/<dtype>" knob "repack" is 1, none under
// cfg.NoRepack, and in the int8 mode none that its kernels read (int8.glsl
// reads the file layout).
func (b *Backend) repackDetect(cfg Config) []string {
	var out []string
	for _, dt := range RepackDTypes() {
		_, int8 := b.int8Name(dt)
		if !cfg.NoRepack && b.tune.knobs("layout/" + typeName(dt))["repack"] == 1 && !(b.info.Int8MatMul && int8) {
			out = append(out, dt.String())
		}
	}
	return out
}

// specRepack is weights.glsl's REPACK specialization constant.
const specRepack = 15

// layoutSpec is the specialization constants of a kernel reading weight
// t: spec, and for a repacked t REPACK set (the constants between padded
// with zeros, so a weight kernel's dispatch passes all of its own).
func (t *Tensor) layoutSpec(spec []uint32) []uint32 {
	if !t.repacked {
		return spec
	}
	s := make([]uint32, specRepack+1)
	copy(s, spec)
	s[specRepack] = 1
	return s
}
