// cli_test.go - usageError against the flag package's real messages (cli.go).
package main

import (
	"flag"
	"io"
	"testing"
)

// usageError rewrites the flag package's real messages (not copies of them) into the C
// programs' style: if a Go release words them differently, this fails instead of go-synth
// printing Go's raw text.
func TestUsageError(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--bogus"}, "--bogus: unknown flag (see --help)"},
		{[]string{"-bogus=1"}, "--bogus: unknown flag (see --help)"},
		{[]string{"--port"}, "--port: needs a value (see --help)"},
		{[]string{"--port=x"}, "--port: expected a port number from 0 to 65535, got 'x'"},
		{[]string{"--n", "0"}, "--n: expected an integer from 1 to 9, got '0'"},
		{[]string{"--version=x"}, "--version: takes no value, got 'x'"},
		{[]string{"--version=1"}, "--version: takes no value, got '1'"},
	} {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		fs.Func("port", "", func(string) error { return errPort })
		fs.Func("n", "", func(string) error { return errN })
		var version switchFlag
		fs.Var(&version, "version", "")
		err := fs.Parse(c.args)
		if err == nil {
			t.Fatalf("%v: accepted", c.args)
		}
		if got := usageError(err); got != c.want {
			t.Errorf("%v: %q, want %q (flag said %q)", c.args, got, c.want, err)
		}
	}
}

type constErr string

func (e constErr) Error() string { return string(e) }

const (
	errPort = constErr("expected a port number from 0 to 65535")
	errN    = constErr("expected an integer from 1 to 9")
)
