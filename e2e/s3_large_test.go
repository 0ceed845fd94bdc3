package e2e

import (
	"crypto/sha256"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"strata/proxy/s3"
)

// patternReader yields n deterministic bytes: block b of 64 KiB is a
// keyed pattern, cheap to make and to check.
type patternReader struct{ off, n int64 }

func (r *patternReader) Read(p []byte) (int, error) {
	if r.off >= r.n {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), r.n-r.off)]
	for i := range p {
		o := r.off + int64(i)
		p[i] = byte(o>>16) ^ byte(o*31) ^ byte(o>>3)
	}
	r.off += int64(len(p))
	return len(p), nil
}

// timedGet GETs the path opaque from rawURL (signed for the bucket when
// sign) and returns the time to the first body byte, the whole time, the
// body's SHA-256 and length.
func timedGet(t testing.TB, rawURL, opaque string, sign bool) (ttfb, total time.Duration, sum [32]byte, n int64) {
	t.Helper()
	req, _ := http.NewRequest("GET", rawURL+"/", nil)
	req.URL.Opaque = opaque
	if sign {
		date := s3.AppendDate(nil, time.Now())
		host := strings.TrimPrefix(rawURL, "http://")
		req.Header.Set(s3.HeaderDate, string(date))
		req.Header.Set(s3.HeaderContentSHA256, s3.UnsignedPayload)
		req.Header.Set("Authorization", string(s3Signer.AppendAuthorization(nil, "GET", []byte(opaque), []byte(host), date)))
	}
	t0 := time.Now()
	resp, err := s3Client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", opaque, resp.Status, b)
	}
	h := sha256.New()
	buf := make([]byte, 256<<10)
	k, err := resp.Body.Read(buf)
	ttfb = time.Since(t0)
	h.Write(buf[:k])
	n = int64(k)
	if err == nil {
		m, err := io.CopyBuffer(h, resp.Body, buf)
		if err != nil {
			t.Fatalf("GET %s: body: %v", opaque, err)
		}
		n += m
	}
	total = time.Since(t0)
	copy(sum[:], h.Sum(nil))
	return ttfb, total, sum, n
}

// TestS3LargeObject: a cold object of STRATA_S3_LARGE bytes (e.g.
// 1073741824; unset: skipped, it takes a while) read through strata in
// order, whole and in 8 MiB ranges with read-ahead off and on (the
// ranges behind STRATA_S3_LATENCY of bucket latency), against
// the same reads from the bucket directly. Logs first-byte time and
// throughput; checks the bytes and that the bucket sent at most 1.1× the
// bytes served.
func TestS3LargeObject(t *testing.T) {
	var size int64
	if _, err := fmt.Sscan(os.Getenv("STRATA_S3_LARGE"), &size); err != nil || size <= 0 {
		t.Skip("STRATA_S3_LARGE unset: set it to an object size in bytes (1073741824 for the issue's 1 GiB)")
	}
	vgw := startVersity(t)
	key := "large/disk image.raw"
	path := string(s3.AppendPath(nil, s3Bucket, []byte(key)))
	req, _ := http.NewRequest("PUT", "http://"+vgw+"/", &patternReader{n: size})
	req.ContentLength = size
	req.URL.Opaque = path
	date := s3.AppendDate(nil, time.Now())
	req.Header.Set(s3.HeaderDate, string(date))
	req.Header.Set(s3.HeaderContentSHA256, s3.UnsignedPayload)
	req.Header.Set("Cache-Control", "max-age=3600")
	req.Header.Set("Authorization", string(s3Signer.AppendAuthorization(nil, "PUT", []byte(path), []byte(vgw), date)))
	if resp, err := s3Client.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("upload: %v %v", resp, err)
	}
	want := sha256.New()
	io.Copy(want, &patternReader{n: size})
	var wantSum [32]byte
	copy(wantSum[:], want.Sum(nil))
	mib := float64(size) / (1 << 20)
	report := func(what string, ttfb, total time.Duration, sum [32]byte, n int64) float64 {
		t.Logf("%-34s first byte %8.2f ms, %7.1f MiB/s (%d bytes in %v)", what, float64(ttfb.Microseconds())/1000, mib/total.Seconds(), n, total.Round(time.Millisecond))
		if sum != wantSum || n != size {
			t.Errorf("%s: %d bytes, sum differs %v", what, n, sum != wantSum)
		}
		return mib / total.Seconds()
	}
	ttfb, total, sum, n := timedGet(t, "http://"+vgw, path, true)
	direct := report("bucket, direct", ttfb, total, sum, n)

	cfg := s3StrataConfig("%s", "      access_key_id: "+s3Key+"\n      secret_access_key: "+s3Secret+"\n") +
		"cache:\n  max_object_size: %s\n  read_ahead: %d\n"
	opaque := string(s3.AppendEscaped([]byte("/"), []byte(key)))
	{
		// What the hops cost without storing: the object is over
		// max_object_size, so strata streams it through.
		cp := startCountingProxy(t, vgw)
		st := startStrata(t, strataOpts{Config: fmt.Sprintf(cfg, cp.Addr, "1MiB", 4), Mem: "256MiB"})
		ttfb, total, sum, n = timedGet(t, st.URL, opaque, false)
		report("strata, streamed through uncached", ttfb, total, sum, n)
		// Stored in the memory tier only: no wait for disk write room.
		memCfg := fmt.Sprintf(cfg, cp.Addr, "4GiB", 4) + "  memory:\n    capacity: 1536MiB\n  disk:\n    path: \"\"\n"
		st = startStrata(t, strataOpts{Config: memCfg, Mem: "1536MiB", Args: []string{"-cache-path", ""}})
		ttfb, total, sum, n = timedGet(t, st.URL, opaque, false)
		report("strata cold, whole GET, memory only", ttfb, total, sum, n)
		// The counting hop's own cost, for the runs below that go through it.
		ttfb, total, sum, n = timedGet(t, "http://"+cp.Addr, path, true)
		report("bucket, through the counting hop", ttfb, total, sum, n)
	}
	{
		// The figure: a cold GET stored (memory and disk), strata
		// straight to the bucket as in production, against the bucket
		// read directly.
		st := startStrata(t, strataOpts{Config: fmt.Sprintf(cfg, vgw, "4GiB", -1), Mem: "256MiB", Args: []string{"-cache-size", "2GiB"}})
		ttfb, total, sum, n = timedGet(t, st.URL, opaque, false)
		stored := report("strata cold, whole GET, no hop", ttfb, total, sum, n)
		t.Logf("stored cold GET ÷ bucket direct: %.2f", stored/direct)
	}
	// STRATA_S3_RATE (MiB/s): the same pair with the bucket paced to one
	// S3 stream's speed (tens to a few hundred MB/s), so that the bucket,
	// not the two cores all of this shares, sets the pace.
	var rate float64
	if fmt.Sscan(os.Getenv("STRATA_S3_RATE"), &rate); rate > 0 {
		cp := startCountingProxy(t, vgw)
		cp.rate = rate * (1 << 20)
		ttfb, total, sum, n = timedGet(t, "http://"+cp.Addr, path, true)
		paced := report(fmt.Sprintf("bucket paced to %g MiB/s", rate), ttfb, total, sum, n)
		st := startStrata(t, strataOpts{Config: fmt.Sprintf(cfg, cp.Addr, "4GiB", -1), Mem: "256MiB", Args: []string{"-cache-size", "2GiB"}})
		ttfb, total, sum, n = timedGet(t, st.URL, opaque, false)
		stored := report("strata cold, whole GET, paced", ttfb, total, sum, n)
		t.Logf("paced: stored cold GET ÷ bucket: %.2f", stored/paced)
	}
	// STRATA_S3_LATENCY (a Go duration) delays every bucket request, as
	// a bucket across a network would (S3's first byte: tens of ms).
	delay, _ := time.ParseDuration(os.Getenv("STRATA_S3_LATENCY"))
	ahead := 4 // STRATA_S3_READ_AHEAD: cache.read_ahead for the second run
	fmt.Sscan(os.Getenv("STRATA_S3_READ_AHEAD"), &ahead)
	for _, ra := range []int{-1, ahead} {
		cp := startCountingProxy(t, vgw)
		cp.delay = delay
		st := startStrata(t, strataOpts{Config: fmt.Sprintf(cfg, cp.Addr, "4GiB", ra), Mem: "256MiB", Args: []string{"-cache-size", "2GiB"}})
		if ra < 0 {
			ttfb, total, sum, n = timedGet(t, st.URL, opaque, false)
			report("strata cold, whole GET, via hop", ttfb, total, sum, n)
			cp.bytes.Store(0)
			st = startStrata(t, strataOpts{Config: fmt.Sprintf(cfg, cp.Addr, "4GiB", ra), Mem: "256MiB", Args: []string{"-cache-size", "2GiB"}})
		}
		// In order, 8 MiB at a time, as a player or an edge reads.
		h := sha256.New()
		const chunk = 8 << 20
		var first time.Duration
		t0 := time.Now()
		for off := int64(0); off < size; off += chunk {
			end := min(off+chunk, size) - 1
			req, _ := http.NewRequest("GET", st.URL+"/", nil)
			req.URL.Opaque = opaque
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, end))
			resp, err := s3Client.Do(req)
			if err != nil || resp.StatusCode != 206 {
				t.Fatalf("range %d: %v %v", off, resp, err)
			}
			if off == 0 {
				buf := make([]byte, 1)
				io.ReadFull(resp.Body, buf)
				first = time.Since(t0)
				h.Write(buf)
			}
			io.Copy(h, resp.Body)
			resp.Body.Close()
		}
		total = time.Since(t0)
		copy(sum[:], h.Sum(nil))
		report(fmt.Sprintf("strata cold, 8 MiB ranges, ahead %d", ra), first, total, sum, size)
		ratio := float64(cp.bytes.Load()) / float64(size)
		t.Logf("  bucket sent %.4f× the bytes served (%d requests), read ahead %v slices", ratio, cp.total.Load(),
			metric(t, st.Admin, "strata_read_ahead_slices_total"))
		if ratio > 1.1 {
			t.Errorf("bucket sent %.3f× the bytes served", ratio)
		}
	}
}
