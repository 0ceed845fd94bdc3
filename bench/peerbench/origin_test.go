package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"
)

func TestBuiltinOrigin(t *testing.T) {
	o, err := startBuiltinOrigin()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := o.Close(ctx); err != nil {
			t.Error(err)
		}
	}()
	c := &http.Client{Transport: &http.Transport{}}
	defer c.CloseIdleConnections()
	fetch := func(path, rng string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, o.URL()+path, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, b
	}
	resp, whole := fetch("/obj/256k?max-age=60&k=3", "")
	if resp.StatusCode != 200 || len(whole) != 256<<10 || resp.Header.Get("Cache-Control") != "public, max-age=60" {
		t.Fatalf("whole: %d, %d bytes, %q", resp.StatusCode, len(whole), resp.Header.Get("Cache-Control"))
	}
	_, again := fetch("/obj/256k?u=other", "")
	if !bytes.Equal(whole, again) {
		t.Error("bytes differ between URLs of one size")
	}
	resp, part := fetch("/obj/256k", "bytes=70000-70099")
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(part, whole[70000:70100]) {
		t.Errorf("range: status %d, equal %v", resp.StatusCode, bytes.Equal(part, whole[70000:70100]))
	}
	resp, big := fetch("/obj/1GiB", fmt.Sprintf("bytes=%d-%d", 1<<30-10, 1<<30-1))
	if resp.StatusCode != http.StatusPartialContent || !bytes.Equal(big, pattern[patternSize-10:]) {
		t.Errorf("1GiB tail: status %d, %v", resp.StatusCode, big)
	}
	for path, want := range map[string]int{"/obj/5GiB": 404, "/obj/xyz": 404, "/other": 404, "/obj/1k?max-age=-1": 400} {
		if resp, _ := fetch(path, ""); resp.StatusCode != want {
			t.Errorf("%s: status %d; want %d", path, resp.StatusCode, want)
		}
	}
	if n := o.requests.Load(); n != 8 {
		t.Errorf("origin counted %d requests; want 8", n)
	}
}
