package e2e

// TestRecoverDamagedRegionHeaders: strata fills several disk regions and
// stops; bytes are flipped in the region headers of its cache file. A
// restart with recovery quiet logs each damaged region and keeps serving
// right bytes; one with recovery strict exits 1 and says why.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// recoverConfig: small regions so that a few MiB fill several.
const recoverConfig = `cache:
  slice_size: 512KiB
  disk:
    region_size: 1MiB
    buffer_size: 512KiB
    recovery: %s
`

func TestRecoverDamagedRegionHeaders(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	dir := t.TempDir()
	opts := strataOpts{Origin: o.URL("origin"), Dir: dir, Mem: "2MiB", Config: fmt.Sprintf(recoverConfig, "quiet")}
	s := startStrata(t, opts)
	evictToDisk(t, s, 40)
	if err := s.Stop(); err != nil {
		t.Fatalf("SIGTERM: %v; output:\n%s", err, s.Output())
	}
	cacheFile := filepath.Join(dir, "strata.cache")
	damaged := damageRegionHeaders(t, cacheFile, 3)
	strictCopy := filepath.Join(t.TempDir(), "strict.cache")
	copyFile(t, cacheFile, strictCopy)

	opts.Args = []string{"-listen", strings.TrimPrefix(s.URL, "http://")}
	s2 := startStrata(t, opts)
	out := s2.Output()
	for _, r := range damaged {
		re := regexp.MustCompile(fmt.Sprintf(`region header damaged.* region=%d reason=".*region header (checksum|magic)`, r))
		if !re.MatchString(out) {
			t.Errorf("quiet restart: no log line for damaged region %d; output:\n%s", r, out)
		}
	}
	if !strings.Contains(out, fmt.Sprintf("dropped regions with damaged headers regions=%d", len(damaged))) {
		t.Errorf("quiet restart: no summary line; output:\n%s", out)
	}
	checkServes(t, s2)
	if m := metric(t, s2.Admin, "strata_disk_recovery_damaged_regions"); m != float64(len(damaged)) {
		t.Errorf("strata_disk_recovery_damaged_regions %v, want %d", m, len(damaged))
	}

	cfg := filepath.Join(t.TempDir(), "strict.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(recoverConfig, "strict")), 0o644); err != nil {
		t.Fatal(err)
	}
	out, code := runStrata(t, strataBin(t), "-config", cfg, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0",
		"-origin", o.URL("origin"), "-cache-path", strictCopy, "-cache-size", "128MiB", "-mem", "2MiB")
	if code != 1 || !strings.Contains(out, "strict recovery refused a damaged device") || !strings.Contains(out, "header") {
		t.Errorf("strict restart: exit %d, want 1 with a clear message; output:\n%s", code, out)
	}
}

// damageRegionHeaders flips a byte in the header of n regions that hold
// data (past the magic, so the checksum catches it) and returns their
// indexes. It reads the layout from superblock copy 0 (hybrid/disk/doc.go).
func damageRegionHeaders(t *testing.T, path string, n int) []int {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sb := make([]byte, 64)
	if _, err := f.ReadAt(sb, 0); err != nil || string(sb[:8]) != "STRAKB01" {
		t.Fatalf("superblock: %q %v", sb[:8], err)
	}
	regionSize, count := int64(binary.LittleEndian.Uint64(sb[16:])), int(binary.LittleEndian.Uint32(sb[24:]))
	dataStart := int64(binary.LittleEndian.Uint64(sb[32:]))
	var damaged []int
	hdr := make([]byte, 32)
	for r := 0; r < count && len(damaged) < n; r++ {
		off := dataStart + int64(r)*regionSize
		if _, err := f.ReadAt(hdr, off); err != nil {
			t.Fatal(err)
		}
		if string(hdr[:4]) != "REGN" {
			continue
		}
		hdr[8+len(damaged)*4] ^= 0x5a // instance id or region sequence
		if _, err := f.WriteAt(hdr, off); err != nil {
			t.Fatal(err)
		}
		damaged = append(damaged, r)
	}
	if len(damaged) < n {
		t.Fatalf("only %d regions hold data, want %d", len(damaged), n)
	}
	return damaged
}

// checkServes GETs the objects evictToDisk stored: each is 200 with the
// origin's bytes, from the cache or (its region dropped) from the origin.
func checkServes(t *testing.T, s *strata) {
	t.Helper()
	want := objectBytes("/obj/256k/filler", 0, "", 0, 256<<10)
	hits := 0
	for i := range 40 {
		resp, body := get(t, fmt.Sprintf("%s/obj/256k/filler?max-age=600&n=%d", s.URL, i))
		if resp.StatusCode != 200 || !bytes.Equal(body, want) {
			t.Fatalf("object %d after recovery: %s, %d bytes, right=%v", i, resp.Status, len(body), bytes.Equal(body, want))
		}
		if strings.Contains(cacheStatus(resp.Header), "hit") {
			hits++
		}
	}
	if hits == 0 {
		t.Error("no object survived recovery: the undamaged regions were dropped too")
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
