package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
)

// policyRC stops Debian's maintainer scripts from starting the packages'
// own services (nginx on port 80, ...) while we install; peerbench starts
// each peer itself on loopback. Created only if absent, removed after.
const policyRC = "/usr/sbin/policy-rc.d"

// ensureInstalled makes sure wrk and the selected peers' binaries exist,
// installing the missing Debian packages when allowed: apt-get update
// once, then all packages in one go, then one by one if that failed. It
// returns, per package, why it is still missing.
func ensureInstalled(systems []*system, install bool) map[string]error {
	want := map[string][]string{"wrk": {"wrk"}}
	for _, s := range systems {
		if s.Package != "" {
			want[s.Package] = s.Bins
		}
	}
	var missing []string
	for pkg, bins := range want {
		if !haveAll(bins) {
			missing = append(missing, pkg)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 && install {
		aptInstall(missing)
	}
	out := map[string]error{}
	for _, pkg := range missing {
		if !haveAll(want[pkg]) {
			out[pkg] = fmt.Errorf("%w: package %s (binaries %v)", ErrUnavailable, pkg, want[pkg])
		}
	}
	return out
}

func haveAll(bins []string) bool {
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			return false
		}
	}
	return true
}

func aptInstall(pkgs []string) {
	if _, err := os.Stat(policyRC); errors.Is(err, os.ErrNotExist) {
		if os.WriteFile(policyRC, []byte("#!/bin/sh\nexit 101\n"), 0o755) == nil {
			defer os.Remove(policyRC)
		}
	}
	fmt.Fprintf(os.Stderr, "peerbench: installing %v\n", pkgs)
	if err := apt("update"); err != nil {
		fmt.Fprintf(os.Stderr, "peerbench: apt-get update: %v\n", err)
	}
	if apt(append([]string{"install", "-y", "--no-install-recommends"}, pkgs...)...) == nil {
		return
	}
	for _, p := range pkgs {
		if err := apt("install", "-y", "--no-install-recommends", p); err != nil {
			fmt.Fprintf(os.Stderr, "peerbench: skipping %s: apt-get install failed: %v\n", p, err)
		}
	}
}

func apt(args ...string) error {
	cmd := exec.Command("apt-get", args...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, tail(out, 300))
	}
	return nil
}
