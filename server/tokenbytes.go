package server

import "github.com/vkllm/vkllm/tokenizer"

// tokenText is a token's text (special tokens written out) and its bytes
// (see tokenizer.Tokenizer.TokenBytes).
func tokenText(tok *tokenizer.Tokenizer, id int32) (string, []byte) { return tok.TokenBytes(id) }
