// Package grammar holds the grammars that constrain decoding: a JSON
// Schema (the reply is one JSON document of it), a regex pattern (for a
// schema's string) and a forced tool call (a name and a JSON object in
// a chat format's call syntax). Each gives a sampler.Constraint per
// sequence over a Vocab, the model's tokens as bytes:
//
//	v := grammar.NewVocab(pieces, special, eos)       // once per model
//	s, err := grammar.CompileSchema(schemaJSON)       // or JSONObjectSchema
//	c := grammar.NewSchemaConstraint(s, v, maxTokens) // one per sequence
//	params.Constraint = c                             // sampler.Params
//
// NewToolCallGrammarArgs and NewToolCallConstraint do the same for a
// forced call; SchemaCache keeps compiled schemas by text. A chat
// request gets them from engine's planner; a user of the sampler alone
// builds them as above.
//
// ToolCallConstraint is the grammar of one forced
// tool call (a name and a JSON object in a chat format's call syntax,
// the object following the tool's schema when it has one), and
// SchemaConstraint makes the reply one JSON document of a Schema.
//
// CompileSchema turns a JSON Schema (the subset in jsonschema.go; any
// other keyword that constrains values is a *SchemaError) into a
// pushdown automaton over the bytes of compact JSON: a stack of frames,
// one per value being written, each with its small state, and an exact
// shortest completion for max_tokens. A Vocab's tokens go in a byte trie
// once; a step's mask walks it with the automaton, a refused byte pruning
// its subtree, each byte's writes undone on the way back. Inside a string
// the tokens that stay in it are a mask cached per vocabulary (per
// pattern state for pattern strings, in an LRU), and only the tokens
// holding a '"' are walked. SchemaCache keeps compiled schemas by text.
//
// ToolCallConstraint walks the same tries (and one of the special tokens,
// which only write the call's literal parts) with its grammar's state,
// copied at each depth, and the arguments' schema state, undone. Inside a
// string the plain tokens are a mask; without a schema, the others that
// stay in the string only change its lexer, known per vocabulary, so
// again only the tokens holding a '"' are walked.
package grammar
