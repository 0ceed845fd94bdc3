package proxy

import (
	"net/http"
	"testing"
)

// TestSurrogateServer: strata announces itself with Surrogate-Capability,
// obeys a Surrogate-Control targeted at it, and removes the field before
// forwarding, on a stored and on a passed response; turned off, it does
// none of this.
func TestSurrogateServer(t *testing.T) {
	for _, off := range []bool{false, true} {
		var capSeen []string
		p := newPair(t, func(w http.ResponseWriter, r *http.Request) {
			capSeen = append(capSeen, r.Header.Get("Surrogate-Capability"))
			w.Header().Set("Cache-Control", "no-store")
			w.Header().Set("Surrogate-Control", "max-age=60;strata")
			_, _ = w.Write([]byte("body"))
		}, func(o *Options) { o.Policy.IgnoreSurrogateControl = off })
		for range 2 {
			r := p.get("/s")
			want := ""
			if off {
				want = "max-age=60;strata"
			}
			expectHeader(t, r, "Surrogate-Control", want)
			waitFor(t, func() bool { return p.srv.nfills.Load() == 0 })
		}
		wantHits, wantCap := int64(1), `strata="Surrogate/1.0"`
		if off {
			wantHits, wantCap = 2, ""
		}
		if n := p.hits.Load(); n != wantHits {
			t.Errorf("off=%v: origin saw %d requests, want %d", off, n, wantHits)
		}
		if capSeen[0] != wantCap {
			t.Errorf("off=%v: Surrogate-Capability %q, want %q", off, capSeen[0], wantCap)
		}
	}
}
