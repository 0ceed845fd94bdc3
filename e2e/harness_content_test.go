package e2e

import (
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"hash/fnv"
	"io"
	"net/http"
	"strconv"
	"testing"
)

// The sample origin's content formula, as cmd/origin/content.go defines
// it (the layering rules keep e2e from importing cmd/): object bytes are a
// pure function of (path, version, variant), so tests check what they
// receive without asking the origin. TestOriginContent compares this copy
// with the real binary.
//
//	seed   = FNV-1a 64 of path + "\x00" + decimal(version) + "\x00" + variant
//	word k = splitmix64 finaliser of seed + (k+1)*0x9E3779B97F4A7C15
//	byte i = byte(word(i/8) >> (8*(i%8)))

// objectSeed is the seed of /obj/... at path (no query), version (the
// version= parameter plus the origin's epoch) and variant (the values of the
// request headers named by vary=, joined with "\x00").
func objectSeed(path string, version int64, variant string) uint64 {
	h := fnv.New64a()
	io.WriteString(h, path+"\x00"+strconv.FormatInt(version, 10)+"\x00"+variant)
	return h.Sum64()
}

func objectWord(seed uint64, k int64) uint64 {
	z := seed + uint64(k+1)*0x9E3779B97F4A7C15
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// objectFill writes the object's bytes [off, off+len(p)) into p.
func objectFill(p []byte, seed uint64, off int64) {
	var w [8]byte
	for len(p) > 0 {
		binary.LittleEndian.PutUint64(w[:], objectWord(seed, off/8))
		n := copy(p, w[off%8:])
		p, off = p[n:], off+int64(n)
	}
}

// objectBytes returns n bytes of the object at path from off.
func objectBytes(path string, version int64, variant string, off, n int64) []byte {
	p := make([]byte, n)
	objectFill(p, objectSeed(path, version, variant), off)
	return p
}

// objectCRC is the CRC-32 (IEEE) of the first size bytes of the object,
// computed in 1 MiB steps (for objects too large to hold).
func objectCRC(path string, version int64, variant string, size int64) uint32 {
	seed := objectSeed(path, version, variant)
	buf := make([]byte, 1<<20)
	var crc uint32
	for off := int64(0); off < size; off += int64(len(buf)) {
		p := buf[:min(int64(len(buf)), size-off)]
		objectFill(p, seed, off)
		crc = crc32.Update(crc, crc32.IEEETable, p)
	}
	return crc
}

// originStats is GET /_stats of the sample origin.
type originStats struct {
	Requests     uint64            `json:"requests"`
	Bytes        uint64            `json:"bytes"`
	NotModified  uint64            `json:"not_modified"`
	Partial      uint64            `json:"partial"`
	Inflight     int64             `json:"inflight"`
	MaxInflight  int64             `json:"max_inflight"`
	Paths        map[string]uint64 `json:"paths"`
	PathsDropped uint64            `json:"paths_dropped"`
}

// startOrigin starts bin/origin on a free loopback port.
func startOrigin(t testing.TB) *process {
	t.Helper()
	return startProcess(t, binPath(t, "origin"), "-listen", "127.0.0.1:0")
}

// getOriginStats reads the origin's counters.
func getOriginStats(t testing.TB, o *process) originStats {
	t.Helper()
	resp, err := http.Get(o.URL("origin") + "/_stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s originStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatalf("origin /_stats: %v", err)
	}
	return s
}

// originPost POSTs to an origin hook such as "/_stats/reset" or
// "/_control?fail=503".
func originPost(t testing.TB, o *process, pathQuery string) {
	t.Helper()
	resp, err := http.Post(o.URL("origin")+pathQuery, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("POST %s: %s", pathQuery, resp.Status)
	}
}
