package configs

import (
	"slices"
	"testing"
	"time"
)

func TestClusterProblems(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string
	}{
		{"peer not a URL", good + "cluster:\n  peers: [\"10.0.0.2:9090\"]\n",
			[]string{`5: cluster.peers[0]: bad URL`}},
		{"peer with a path", good + "cluster:\n  peers: [\"http://a:9090\", \"http://b:9090/purge\"]\n",
			[]string{`5: cluster.peers[1]: bad URL "http://b:9090/purge": an origin URL has no path`}},
		{"loop token", good + "cluster:\n  loop_token: \"my cdn\"\n",
			[]string{`5: cluster.loop_token: "my cdn" is not an HTTP token`}},
		{"loop allow", good + "cluster:\n  loop_allow: -2\n",
			[]string{`5: cluster.loop_allow: must be between -1 and 64`}},
		{"peer timeout", good + "cluster:\n  peer_timeout: -1s\n",
			[]string{`5: cluster.peer_timeout: must be positive`}},
	} {
		t.Run(tc.name, func(t *testing.T) { wantLoadProblems(t, tc.yaml, tc.want) })
	}
}

func TestClusterCompose(t *testing.T) {
	c, err := Load([]byte(good+`cluster:
  peers: ["http://10.0.0.12:9090", "http://10.0.0.13:9090"]
  peer_timeout: 3s
  peer_retry_for: -1s
  loop_token: edge-fleet
  loop_allow: -1
`), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := c.Compose(nil)
	if err != nil {
		t.Fatal(err)
	}
	po, lo := p.Proxy.Peers, p.Proxy.Loop
	if !slices.Equal(po.URLs, []string{"http://10.0.0.12:9090", "http://10.0.0.13:9090"}) ||
		po.Timeout != 3*time.Second || po.RetryFor != -time.Second {
		t.Errorf("peers %+v", po)
	}
	if lo.Token != "edge-fleet" || lo.Allow != -1 {
		t.Errorf("loop %+v", lo)
	}
}
