// Package layering holds the test that keeps vkllm's imports pointing
// down: its table lists each package's layer and the packages of the
// module it may import. A new package, or a new import between
// packages, goes into the table, where a reviewer sees the arrow.
package layering
