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
	"cmd":       {"blockdev", "admission", "hybrid", "proxy", "configs"},
	"e2e":       {"blockdev", "admission", "hybrid", "proxy", "configs", "e2e"},
}

// importersOfConfigs: only the binaries and the e2e tests may import configs.
// DESIGN.md lets other cmd/ binaries use what they need, so every cmd/ may.
var importersOfConfigs = map[string]bool{"cmd": true, "e2e": true, "configs": true}

// selfContained: the packages under these directories import no other
// strata package at all (the standard library and third-party modules
// only): proxy/internal holds the HTTP rules as pure functions.
var selfContained = []string{"proxy/internal/"}

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
			if depTop == "configs" && !importersOfConfigs[rel] && !importersOfConfigs[top] {
				t.Errorf("%s imports %s: only cmd/ binaries and e2e may import configs", p.ImportPath, imp)
			}
			if selfContainedPackage(rel) && dep != rel {
				t.Errorf("%s imports %s: packages under %v import no other strata package", p.ImportPath, imp, selfContained)
			}
		}
	}
}

// selfContainedPackage reports whether the package at rel (its path
// below strata/) lies under a selfContained directory.
func selfContainedPackage(rel string) bool {
	for _, dir := range selfContained {
		if strings.HasPrefix(rel+"/", dir) {
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
