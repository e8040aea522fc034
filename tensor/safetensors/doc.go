// Package safetensors reads and writes the safetensors format
// (https://github.com/huggingface/safetensors), strictly.
//
// File layout:
//
//	[0, 8)        N, the header length, uint64 little-endian (N ≤ 100,000,000)
//	[8, 8+N)      the header: a UTF-8 JSON object
//	[8+N, end)    the data section: every tensor's bytes, row-major,
//	              little-endian, back to back
//
// The header maps each tensor name to
//
//	{"dtype": "BF16", "shape": [2560, 1024], "data_offsets": [begin, end]}
//
// (offsets relative to the data section) plus an optional "__metadata__"
// object of strings. Writers pad the header with spaces to a multiple of 8.
//
// Reading follows the reference implementation (safetensors 0.8.0) and is
// stricter where it silently merges: the header fits in the file, is valid
// UTF-8 and JSON without duplicate keys (tensor names, entry fields, and
// metadata keys); each entry has exactly-named dtype, shape (non-negative
// integers) and data_offsets [begin, end] with begin ≤ end; element count ×
// dtype size (overflow-checked) equals end-begin; and in data order the
// ranges tile the data section: no overlap, no hole, nothing after the
// last tensor. Unknown entry fields are ignored and "__metadata__": null
// means none, as in the reference. A failure is a *tensor.CorruptError
// with the file byte offset of the problem (the entry's key, the bad JSON
// token, or the place in the data section). A dtype the format defines
// but vkllm does not read (F8_E4M3, U16, C64, …) gives
// *tensor.UnsupportedDTypeError, once the file is otherwise sound.
//
// Open maps the file read-only (a read into memory where mapping is
// missing); Tensor.Data are views into the mapping (no copy), in data
// order, valid until Close. OpenIndex opens a sharded checkpoint
// (model.safetensors.index.json). Write and WriteFile produce files the
// Python package reads back identically.
package safetensors
