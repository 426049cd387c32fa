package main

import (
	"errors"
	"flag"
	"io"
)

// errUsage reports a flag error that the flag package has already printed; errHelp a -h request.
var (
	errUsage = errors.New("usage")
	errHelp  = errors.New("help")
)

func newFlags(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("gbdmpc "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelp
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return errUsage
	}
	return nil
}
