package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// site is the Host clients of the tiers ask for: edges pass it on to the
// shield (host_header: preserve), so every edge's request has one key there.
const site = "media.example.com"

const memOnly = "cache:\n  memory:\n    capacity: 32MiB\n  disk:\n    path: \"\"\n"

// TestLoopSelfOrigin: a node whose origin is its own client listener
// answers 508 at once: the nested request carries its CDN-Loop id, so it
// makes one nested request, not a pile of them.
func TestLoopSelfOrigin(t *testing.T) {
	t.Parallel()
	n := &node{listen: freePort(t), admin: freePort(t), dir: t.TempDir()}
	n.yaml = "origins:\n  - url: http://" + n.listen + "\n" + memOnly
	startNode(t, n)
	t0 := time.Now()
	resp, body := get(t, n.URL+"/obj/1k/self?max-age=60")
	took := time.Since(t0)
	if resp.StatusCode != 508 {
		t.Fatalf("self-origin: %s %q; want 508", resp.Status, body)
	}
	if v := metric(t, n.Admin, "strata_loop_detected_total"); v != 1 {
		t.Fatalf("strata_loop_detected_total %v; want 1 (one nested request)", v)
	}
	if v := metric(t, n.Admin, `strata_requests_total{cache_status="miss"}`); v != 1 {
		t.Fatalf("%v misses forwarded; want 1 (the client's)", v)
	}
	t.Logf("self-origin: 508 in %v after one nested request", took.Round(time.Microsecond))
	// A second time: the 508 was not stored.
	if resp, _ := get(t, n.URL+"/obj/1k/self?max-age=60"); resp.StatusCode != 508 {
		t.Fatalf("second: %s", resp.Status)
	}
}

// TestLoopTwoTiers: two nodes whose origins point at each other answer
// 508 after one round: the request comes back to the first carrying its id.
func TestLoopTwoTiers(t *testing.T) {
	t.Parallel()
	a := &node{listen: freePort(t), admin: freePort(t), dir: t.TempDir()}
	b := &node{listen: freePort(t), admin: freePort(t), dir: t.TempDir()}
	a.yaml = "origins:\n  - url: http://" + b.listen + "\n" + memOnly
	b.yaml = "origins:\n  - url: http://" + a.listen + "\n" + memOnly
	startNode(t, a)
	startNode(t, b)
	if resp, body := get(t, a.URL+"/obj/1k/ab?max-age=60"); resp.StatusCode != 508 {
		t.Fatalf("a → b → a: %s %q; want 508", resp.Status, body)
	}
	if va, vb := metric(t, a.Admin, "strata_loop_detected_total"), metric(t, b.Admin, "strata_loop_detected_total"); va != 1 || vb != 0 {
		t.Fatalf("loops detected: a %v, b %v; want a 1, b 0", va, vb)
	}
}

// TestTiersEdgeShield: two edges whose origin is a shield in front of the
// origin. The origin sees each object once, whichever edge asks. With the
// shield killed, edges serve stale what allows it (stale-if-error) and
// answer 502/504 within a second what does not (must-revalidate, or
// never stored).
func TestTiersEdgeShield(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	shield := &node{listen: freePort(t), admin: freePort(t), dir: t.TempDir()}
	shield.yaml = "origins:\n  - url: " + o.URL("origin") + "\n" + memOnly
	startNode(t, shield)
	var edges []*node
	for range 3 {
		e := &node{listen: freePort(t), admin: freePort(t), dir: t.TempDir()}
		e.yaml = "origins:\n  - url: http://" + shield.listen + "\n    timeouts: {connect: 500ms, read: 2s}\n" + memOnly
		startNode(t, e)
		edges = append(edges, e)
	}
	// The origin sees each object once, whichever edge asks.
	fresh := fleetURLs("tier", 40)
	for _, e := range edges {
		if res := loadHost(e.URL, site, fresh, 4, 2, nil, time.Now().Add(10*time.Second)); res.failed.Load() != 0 {
			t.Fatalf("edge %s: %s", e.listen, res)
		}
	}
	if got := originTotal(t, o, fresh); got != len(fresh) {
		t.Fatalf("origin saw %d requests for %d objects through %d edges; want each once", got, len(fresh), len(edges))
	}
	t.Logf("tiers: %d objects through %d edges x 2 passes x 4 clients: origin fetched %d", len(fresh), len(edges), originTotal(t, o, fresh))

	// Short-lived objects, stored on every edge, then the shield dies.
	const n = 10
	var stale, strict []string
	for i := range n {
		stale = append(stale, fmt.Sprintf("/obj/2k/tier-sie?max-age=1&sie=600&n=%d", i))
		strict = append(strict, fmt.Sprintf("/obj/2k/tier-mr?max-age=1&must-revalidate&n=%d", i))
	}
	all := append(append([]string(nil), stale...), strict...)
	for _, e := range edges {
		if res := loadHost(e.URL, site, all, 4, 1, nil, time.Now().Add(10*time.Second)); res.failed.Load() != 0 {
			t.Fatalf("edge %s: %s", e.listen, res)
		}
	}
	shield.kill()
	time.Sleep(1100 * time.Millisecond) // max-age=1 has run out
	var slowest time.Duration
	for _, e := range edges {
		for k, u := range all {
			t0 := time.Now()
			resp, body := get(t, e.URL+u, "Host: "+site)
			took := time.Since(t0)
			slowest = max(slowest, took)
			if k < n {
				if resp.StatusCode != 200 || len(body) != 2048 || !strings.Contains(cacheStatus(resp.Header), "detail=stale") {
					t.Fatalf("shield down, %s: %s, %d bytes, %q; want served stale", u, resp.Status, len(body), cacheStatus(resp.Header))
				}
				continue
			}
			if resp.StatusCode != 502 && resp.StatusCode != 504 {
				t.Fatalf("shield down, %s: %s; want 502 or 504 (must-revalidate)", u, resp.Status)
			}
			if took > time.Second {
				t.Fatalf("shield down, %s: %v; want a prompt answer", u, took)
			}
		}
		t0 := time.Now()
		if resp, _ := get(t, e.URL+"/obj/2k/tier-never", "Host: "+site); resp.StatusCode != 502 || time.Since(t0) > time.Second {
			t.Fatalf("shield down, uncached: %s in %v; want 502 at once", resp.Status, time.Since(t0))
		}
	}
	t.Logf("shield down: %d stale hits and %d 502/504 per edge, slowest answer %v", n, n, slowest.Round(time.Microsecond))
}

// TestDrainReadyz: on SIGTERM a node answers 503 on /readyz (so a load
// balancer's health check takes it out) while it finishes the request it
// already accepted, which gets its whole 200.
func TestDrainReadyz(t *testing.T) {
	t.Parallel()
	o := startOrigin(t)
	n := &node{listen: freePort(t), admin: freePort(t), dir: t.TempDir()}
	n.yaml = "origins:\n  - url: " + o.URL("origin") + "\n" + memOnly
	startNode(t, n)
	if resp, _ := get(t, n.Admin+"/readyz"); resp.StatusCode != 200 {
		t.Fatalf("/readyz before: %s", resp.Status)
	}
	slow := make(chan error, 1)
	go func() { slow <- getWhole(http.DefaultClient, n.URL+"/obj/64k/drain?max-age=60&delay=1500ms", "") }()
	deadline := time.Now().Add(5 * time.Second)
	for getOriginStats(t, o).Inflight == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the slow request never reached the origin")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ready := 0
	for ready == 0 || ready == 200 {
		resp, err := http.Get(n.Admin + "/readyz")
		if err != nil {
			t.Fatalf("/readyz while draining: %v", err)
		}
		resp.Body.Close()
		ready = resp.StatusCode
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d after SIGTERM", ready)
		}
	}
	if ready != 503 {
		t.Fatalf("/readyz while draining: %d; want 503", ready)
	}
	if err := <-slow; err != nil {
		t.Fatalf("request accepted before SIGTERM: %v", err)
	}
	if err := n.Wait(10 * time.Second); err != nil {
		t.Fatalf("exit: %v", err)
	}
}
