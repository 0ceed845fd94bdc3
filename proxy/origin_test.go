package proxy

import "testing"

func TestRouterPick(t *testing.T) {
	r, err := newRouter([]OriginOptions{
		{URL: "http://127.0.0.1:1", Hosts: []string{"Exact.example.com", "*.example.com"}},
		{URL: "http://127.0.0.1:2", Hosts: []string{"*.img.example.com"}},
		{URL: "http://127.0.0.1:3", Default: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.close()
	tests := []struct {
		host string
		want int // index into r.all
	}{
		{"exact.example.com", 0},
		{"EXACT.example.com:8080", 0},
		{"www.example.com", 0},
		{"a.b.example.com", 0},
		{"cdn.img.example.com", 1}, // the longest wildcard wins
		{"img.example.com", 0},
		{"example.com", 2}, // a wildcard does not match its apex
		{"other.org", 2},
		{"", 2},
		{"[::1]:80", 2},
	}
	for _, tc := range tests {
		if got := r.pick([]byte(tc.host)); got != r.all[tc.want] {
			t.Errorf("pick(%q) = origin %v, want %d", tc.host, got, tc.want)
		}
	}
}
