package gguf

// fileTypes are llama.cpp's llama_ftype names (LLAMA_FTYPE_MOSTLY_Q4_1 is
// "Q4_1") by the value of general.file_type. Values 4 to 6 were retired
// by llama.cpp and have no name here.
var fileTypes = map[uint32]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
	36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0",
}

// FileTypeName is llama.cpp's name of a general.file_type value, without
// its LLAMA_FTYPE_MOSTLY_ prefix ("Q4_1" for 3, "F16" for 1), or "" for a
// value llama.cpp does not name.
func FileTypeName(ft uint32) string { return fileTypes[ft] }

// FileType is the name (FileTypeName) of the file's general.file_type, or
// "" when the key is missing, not an integer or not a known value.
func (f *File) FileType() string {
	ft, ok := f.Int("general.file_type")
	if !ok || ft < 0 || ft > 1<<32-1 {
		return ""
	}
	return FileTypeName(uint32(ft))
}
