// Package safetensors reads and writes the safetensors format: an 8-byte
// little-endian header length N, N bytes of JSON header, then the data
// section. The header maps tensor names to {dtype, shape, data_offsets}
// (offsets relative to the data section) plus an optional "__metadata__"
// object of strings.
//
// Reading is strict (every rule of the format's reference implementation):
// the header is at most 100,000,000 bytes and inside the file, valid JSON
// without duplicate keys, every dtype known, every shape's element count ×
// dtype size equal to its byte range, ranges inside the data section,
// not overlapping and covering it without holes. Failures are
// *tensor.CorruptError with the byte offset of the problem, or
// *tensor.UnsupportedDTypeError.
//
// Open maps the file read-only; Tensor.Data are views into the mapping
// (no copy), valid until Close.
package safetensors
