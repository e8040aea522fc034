package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/vkllm/vkllm/errcode"
	"github.com/vkllm/vkllm/models"
)

// newFlags is the flag set of a command, its usage line from commands.
func newFlags(e env, name string) *flag.FlagSet {
	fs := flag.NewFlagSet("vkllm "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	fs.Usage = func() {
		c := lookup(name)
		fmt.Fprintf(fs.Output(), "usage: vkllm %s %s\n\n%s.\n\nFlags:\n", name, c.args, c.summary)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args into fs. When it returns false the command exits
// with code: 0 after -h, 2 on a bad flag (flag printed the error and the
// usage).
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, flag.ErrHelp):
		return 0, false
	default:
		return 2, false
	}
}

// checkDraft checks --draft and --draft-max before a load that can take
// a while: --draft-max is in [1, 64] and comes with --draft, and a
// --draft other than "ngram" names a model folder or .gguf file
// (models.OpenFiles). The engine checks the draft model's vocabulary
// when it loads (engine.ErrDraftVocab).
func checkDraft(draft string, draftMax int) error {
	if draftMax != 0 && (draft == "" || draftMax < 1 || draftMax > 64) {
		return errcode.Wrap(errcode.BadParams, fmt.Errorf("--draft-max must be in [1, 64], with --draft; got %d", draftMax))
	}
	if draft == "" || draft == "ngram" {
		return nil
	}
	f, err := models.OpenFiles(draft)
	if err != nil {
		return fmt.Errorf("--draft: %w", err)
	}
	return f.Close()
}
