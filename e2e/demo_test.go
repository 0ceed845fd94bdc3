package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// TestDemo runs `make demo`'s script on the binaries the harness built
// and checks that its output shows a stored miss, a memory hit, a disk
// hit, a no-store pass that is not stored, and metrics; and that it ends
// within the 60 s it promises.
func TestDemo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the demo needs curl")
	}
	// The script wants BIN/strata and BIN/origin.
	bin := t.TempDir()
	for name, src := range map[string]string{"strata": strataBin(t), "origin": binPath(t, "origin")} {
		if err := os.Symlink(src, filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Dir(string(regexp.MustCompile(`\s+$`).ReplaceAll(out, nil)))
	cmd := exec.Command("sh", filepath.Join(root, "cmd/demo/demo.sh"), bin)
	start := time.Now()
	timer := time.AfterFunc(60*time.Second, func() { cmd.Process.Kill() })
	defer timer.Stop()
	got, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v after %v; output:\n%s", err, time.Since(start), got)
	}
	for what, re := range map[string]string{
		"a stored miss":          `(?m)Cache-Status: strata; fwd=(uri-)?miss; stored$`,
		"a memory hit":           `Cache-Status: strata; hit; detail=memory`,
		"a disk hit":             `Cache-Status: strata; hit; detail=disk`,
		"a no-store response":    `Cache-Control: no-store`,
		"a pass, not stored":     `(?m)Cache-Status: strata; fwd=(uri-)?miss$`,
		"metrics":                `strata_requests_total\{cache_status="hit"\} [1-9]`,
		"the commands it ran":    `\$ curl -sS -D - -o /dev/null 'http://127\.0\.0\.1:\d+/obj/64k\?max-age=300'`,
		"a clean stop of strata": `shutdown: close cache`,
	} {
		if !regexp.MustCompile(re).Match(got) {
			t.Errorf("demo output lacks %s (%s); output:\n%s", what, re, got)
		}
	}
}
