package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// warmClient GETs URLs through a system before a measured run.
var warmClient = &http.Client{
	Timeout: 2 * time.Minute,
	Transport: &http.Transport{
		MaxIdleConnsPerHost: 8,
		DisableCompression:  true,
		IdleConnTimeout:     30 * time.Second,
	},
}

// warmParallel is how many warm-up requests are in flight.
const warmParallel = 4

// warm GETs every path once, whole, from base (4 in flight, bounded by
// ctx), and returns how many failed (error, status not 200, short body).
func warm(ctx context.Context, base string, paths []string) int {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	work := make(chan string)
	var mu sync.Mutex
	failed := 0
	var wg sync.WaitGroup
	for range warmParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range work {
				if err := get(ctx, base+p); err != nil {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}
		}()
	}
feed:
	for _, p := range paths {
		select {
		case work <- p:
		case <-ctx.Done():
			break feed
		}
	}
	close(work)
	wg.Wait()
	return failed
}

func get(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := warmClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("peerbench: %s: status %d", url, resp.StatusCode)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return fmt.Errorf("peerbench: %s: %d of %d bytes", url, n, resp.ContentLength)
	}
	return nil
}

// waitReady polls a probe URL until it answers 200, the process exits, or
// the timeout passes.
func waitReady(ctx context.Context, p *proc, base string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		if last = get(ctx, base+"/obj/1k"+ttlQuery+"&probe=1"); last == nil {
			return nil
		}
		select {
		case <-p.exited:
			return fmt.Errorf("%w: %s exited", ErrNotReady, p.name)
		case <-ctx.Done():
			return fmt.Errorf("%w: %s: %v", ErrNotReady, p.name, last)
		case <-tick.C:
		}
	}
}
