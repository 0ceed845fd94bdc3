package e2e

import (
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestStatsOnce runs `strata stats -once` against a running node while a
// client keeps hitting one object: the view shows requests, a hit ratio
// that is all memory, and the disk tier.
func TestStatsOnce(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	s := startStrata(t, strataOpts{Origin: o.URL("origin")})
	url := s.URL + "/obj/1k/stats?max-age=600"
	get(t, url) // the miss that stores it
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() { // hits until stats has printed
		defer close(done)
		for ctx.Err() == nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}()
	out, err := exec.CommandContext(ctx, strataBin(t), "stats", "-once", "-interval", "500ms",
		"-admin", strings.TrimPrefix(s.Admin, "http://")).CombinedOutput()
	cancel()
	<-done
	if err != nil {
		t.Fatalf("strata stats: %v\n%s", err, out)
	}
	for _, want := range []string{
		"strata " + s.Admin,
		"miss 0/s",
		"hit ratio    requests 100.0%  lookups: memory 100.0%  disk 0.0%  neither 0.0%",
		"disk         online yes",
		"disk writes  0 B/s of budget 64.0 MiB/s",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
}
