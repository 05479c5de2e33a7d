package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// runVersion prints the version of the binary: the module version go
// install stamped (or "(devel)" for a build from a clone), the commit it
// was built from and whether the tree had changes, from the build
// information the go command embeds.
func runVersion(_ context.Context, env *environ, args []string) error {
	if len(args) > 0 {
		if isHelp(args[0]) {
			fmt.Fprintln(env.stdout, "usage: spool version\n\nPrints the module version, the commit the binary was built from, and the Go version.")
			return nil
		}
		return usagef("version takes no arguments (got %q)", args[0])
	}
	fmt.Fprintln(env.stdout, versionLine())
	return nil
}

func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return fmt.Sprintf("spool (no build information) %s %s/%s", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "spool %s", bi.Main.Version)
	vcs := map[string]string{}
	for _, s := range bi.Settings {
		vcs[s.Key] = s.Value
	}
	if rev := vcs["vcs.revision"]; rev != "" {
		fmt.Fprintf(&b, " commit %s", rev)
		if t := vcs["vcs.time"]; t != "" {
			fmt.Fprintf(&b, " (%s)", t)
		}
		if vcs["vcs.modified"] == "true" {
			b.WriteString(" with local changes")
		}
	}
	fmt.Fprintf(&b, " %s %s %s/%s", bi.Main.Path, bi.GoVersion, runtime.GOOS, runtime.GOARCH)
	return b.String()
}
