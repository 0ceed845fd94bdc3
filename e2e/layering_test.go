package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// allowedImports is the import graph of DESIGN.md ("Layout") and STYLE.md
// rule 1: for each top-level directory, the strata directories its packages
// may import. Imports point down the table and never back up.
var allowedImports = map[string][]string{
	"blockdev":  {"blockdev"},
	"admission": {"admission"},
	"hybrid":    {"blockdev", "admission", "hybrid"},
	"proxy":     {"hybrid", "proxy"},
	"configs":   {"blockdev", "admission", "hybrid", "proxy", "configs"},
	"cmd":       {"blockdev", "admission", "hybrid", "proxy", "configs", "cmd"}, // cmd: a binary's own internal packages
	"e2e":       {"blockdev", "admission", "hybrid", "proxy", "configs", "e2e"},
}

// allowedSubImports narrows allowedImports for sub-packages (DESIGN.md's
// layout rows below a top-level directory): a package at or under one of
// these paths may import, among strata packages, only those listed (each
// with its sub-packages) and its own tree. The longest matching path wins.
var allowedSubImports = map[string][]string{
	"hybrid/memory": {},
	"hybrid/disk":   {"blockdev"},
	// The HTTP rules as pure functions: no other strata package, not
	// even each other.
	"proxy/internal/httpcache": {},
	"proxy/internal/byterange": {},
	// SigV4 and S3's formats over the standard library; not internal,
	// so that the e2e tests upload with the signer strata uses.
	"proxy/s3": {},
}

// importersOfConfigs: only the binaries and the e2e tests may import configs.
// DESIGN.md lets other cmd/ binaries use what they need, so every cmd/ may.
var importersOfConfigs = map[string]bool{"cmd": true, "e2e": true, "configs": true}

type listedPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "-tags", "invariants", "strata/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(p.ImportPath, "strata/")
		top, _, _ := strings.Cut(rel, "/")
		allowed, known := allowedImports[top]
		if !known {
			t.Errorf("%s: top-level directory %q is not in DESIGN.md's layout", p.ImportPath, top)
			continue
		}
		imports := append(append(append([]string{}, p.Imports...), p.TestImports...), p.XTestImports...)
		for _, imp := range imports {
			if !strings.HasPrefix(imp, "strata/") {
				continue
			}
			dep := strings.TrimPrefix(imp, "strata/")
			depTop, _, _ := strings.Cut(dep, "/")
			if !contains(allowed, depTop) {
				t.Errorf("%s imports %s: %s may import only %v", p.ImportPath, imp, top, allowed)
			}
			if sub, narrowed, ok := subRule(rel); ok && !within(dep, sub) && !containsTree(narrowed, dep) {
				t.Errorf("%s imports %s: %s may import only %v", p.ImportPath, imp, sub, narrowed)
			}
			if depTop == "configs" && !importersOfConfigs[rel] && !importersOfConfigs[top] {
				t.Errorf("%s imports %s: only cmd/ binaries and e2e may import configs", p.ImportPath, imp)
			}
		}
	}
}

// subRule returns the allowedSubImports entry that governs the package at
// rel: the longest path that rel is or lies under.
func subRule(rel string) (path string, allowed []string, ok bool) {
	for p, a := range allowedSubImports {
		if within(rel, p) && len(p) > len(path) {
			path, allowed, ok = p, a, true
		}
	}
	return path, allowed, ok
}

// within reports whether the package path rel is root or lies under it.
func within(rel, root string) bool {
	return rel == root || strings.HasPrefix(rel, root+"/")
}

// containsTree reports whether dep is, or lies under, one of roots.
func containsTree(roots []string, dep string) bool {
	for _, r := range roots {
		if within(dep, r) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
