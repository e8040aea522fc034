// Package cpu is vkllm's reference backend: plain Go loops, one op at a
// time, split across goroutines. It registers itself as "cpu".
//
// Tensors hold []float32 (F32), []int32 (I32), []uint16 (F16, for KV
// caches) or, for uploaded weights, the weight's bytes as stored. Upload
// does not copy: a weight's bytes stay a view of the file mapping, so the
// model must keep its weight files open while the backend uses them
// (models.Model does).
//
// MatMul dequantises one weight row at a time into a per-goroutine scratch
// row and dots it with every activation row; each output element is one
// dot product with a fixed summation order (8 float32 partial sums, then
// added pairwise), whatever the number of rows: results are bitwise the
// same alone and in a batch. Reductions elsewhere (RMSNorm, softmax) run
// in float64. Attention visits cells in index order and skips masked ones.
package cpu
