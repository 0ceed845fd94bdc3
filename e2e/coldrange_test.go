package e2e

import (
	"fmt"
	"net/http"
	"testing"
	"time"
)

// A cold range of a large object whose origin sends neither ETag nor
// Last-Modified: slices of different origin fetches cannot be proven to
// belong to one representation, so the proxy cannot cache the range as a
// slice of a partial record. The client's range must still cost its own
// bytes, not the whole object's: with the origin paced at 64 MiB/s, the
// 1 KiB at 200 MB of a 256 MiB object comes back in well under 2 s
// (fetching the object whole first took 13.2 s), with exactly the bytes
// the origin holds there and a Content-Range naming the whole size, from
// the origin's one ranged answer.
func TestColdRangeWithoutValidators(t *testing.T) {
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin"), Args: []string{"-cache-size", "512MiB"},
		Config: "cache:\n  slice_size: 1MiB\n  max_object_size: 512MiB\n"})
	const size, off, n = 256 << 20, 200_000_000, 1024
	path, query := "/obj/256MiB", "max-age=3600&rate=64MiB"
	for i, c := range []struct {
		off  int64
		what string
	}{{off, "cold"}, {off + 7*n, "again, nearby"}, {3 << 20, "near the start"}} {
		start := time.Now()
		resp, body := get(t, s.URL+path+"?"+query, fmt.Sprintf("Range: bytes=%d-%d", c.off, c.off+n-1))
		took := time.Since(start)
		t.Logf("%s range at %d: %v, %s", c.what, c.off, took, cacheStatus(resp.Header))
		if resp.StatusCode != http.StatusPartialContent || string(body) != string(objectBytes(path, 0, "", c.off, n)) {
			t.Fatalf("%s range: status %d, %d bytes, not the object's", c.what, resp.StatusCode, len(body))
		}
		if want := fmt.Sprintf("bytes %d-%d/%d", c.off, c.off+n-1, size); resp.Header.Get("Content-Range") != want {
			t.Errorf("%s range: Content-Range %q, want %q", c.what, resp.Header.Get("Content-Range"), want)
		}
		if resp.Header.Get("ETag") != "" || resp.Header.Get("Last-Modified") != "" {
			t.Fatalf("the origin sent a validator: %v", resp.Header)
		}
		if limit := 2 * time.Second; took > limit && i < 2 {
			t.Errorf("%s range took %v, want under %v", c.what, took, limit)
		}
		if i == 0 {
			// One ranged origin answer (the slice probe) served the
			// client; the whole-object fill behind it is a 200.
			if st := getOriginStats(t, o); st.Partial != 1 {
				t.Errorf("the origin sent %d partial answers for the cold range, want 1 (%+v)", st.Partial, st)
			}
		}
	}
}
