// cli.go - go-synth's command line in the style of the C programs (apps/common/flags.h) as far
// as Go's flag package goes: --help and -h print the usage on stdout and exit 0; --version
// prints "go-synth (Jiffy) X.Y.Z" and exits 0; a usage error is one line
// "go-synth: --flag: problem" on stderr and exit status 2 (an unknown flag, a missing value, a
// bad value "expected ..., got '...'", an argument where none is taken). Go's own conventions
// stay: a flag may have one dash or two (-port and --port), abbreviations are not accepted, and
// parsing stops at the first argument that is not a flag.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
)

// jiffyVersion is the version of the Jiffy tree this peer was built from: scripts/build-peers.sh
// reads it from include/jiffy/jiffy.h (its only source) and sets it with
// -ldflags "-X main.jiffyVersion=X.Y.Z". Empty in a plain `go build`.
var jiffyVersion string

// The flag package's error messages (stable since Go 1.0), rewritten into the C programs' style.
var (
	reUnknown = regexp.MustCompile(`^flag provided but not defined: -+(.*)$`)
	reNoValue = regexp.MustCompile(`^flag needs an argument: -+(.*)$`)
	reBool    = regexp.MustCompile(`^invalid boolean value "(.*)" for -+([^:]+): .*$`)
	reInvalid = regexp.MustCompile(`^invalid value "(.*)" for flag -+([^:]+): (.*)$`)
)

// usageError is @err (from flag.Parse) as "--flag: problem".
func usageError(err error) string {
	msg := err.Error()
	if m := reUnknown.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s: unknown flag (see --help)", m[1])
	}
	if m := reNoValue.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s: needs a value (see --help)", m[1])
	}
	if m := reBool.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s: takes no value, got '%s'", m[2], m[1])
	}
	if m := reInvalid.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("--%s: %s, got '%s'", m[2], m[3], m[1])
	}
	return msg
}

// uintFlag defines --name, an integer in [lo, hi], stored in *p.
func uintFlag(p *uint64, name string, lo, hi uint64, usage string) {
	flag.Func(name, usage, func(v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("expected an integer from %d to %d", lo, hi)
		}
		*p = n
		return nil
	})
}

// switchFlag is a flag without a value (--version): unlike flag.Bool it refuses --version=x.
type switchFlag bool

func (s *switchFlag) String() string   { return "" }
func (s *switchFlag) IsBoolFlag() bool { return true }
func (s *switchFlag) Set(v string) error {
	if v != "true" { // what the flag package passes for a bare --version
		return errors.New("takes no value")
	}
	*s = true
	return nil
}

// parseCommandLine parses os.Args[1:] with the flags defined so far, answering --help and
// --version and ending the process on a usage error.
func parseCommandLine() {
	var version switchFlag
	flag.Var(&version, "version", "print go-synth's name and the Jiffy version it belongs to, and exit")
	fs := flag.CommandLine
	fs.Init("go-synth", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // the messages are ours
	err := fs.Parse(os.Args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(os.Stdout)
		flag.Usage()
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "go-synth: %s\n", usageError(err))
		os.Exit(2)
	}
	if fs.NArg() != 0 {
		fmt.Fprintf(os.Stderr, "go-synth: unexpected argument '%s' (this program takes only flags; "+
			"see --help)\n", fs.Arg(0))
		os.Exit(2)
	}
	if version {
		v := jiffyVersion
		if v == "" {
			v = "unknown (built without scripts/build-peers.sh)"
		}
		fmt.Printf("go-synth (Jiffy) %s\n", v)
		os.Exit(0)
	}
}
