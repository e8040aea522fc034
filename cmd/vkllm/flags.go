package main

import (
	"errors"
	"flag"
	"fmt"
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
