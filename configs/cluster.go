package configs

import (
	"fmt"

	"strata/proxy"
)

// Cluster is what a node knows of its fleet: the admin listeners of its
// peers (purges are sent on to them) and its CDN-Loop token. The load
// balancer in front and this list are the whole cluster: there is no
// membership protocol (configs/cluster.md).
type Cluster struct {
	Peers        []string `yaml:"peers,omitempty"` // admin URLs of the other nodes, "http://10.0.0.12:9090"; default none
	PeerTimeout  Duration `yaml:"peer_timeout"`    // one purge sent to one peer; default 2s
	PeerRetryFor Duration `yaml:"peer_retry_for"`  // a peer that failed a purge is retried this long; default 5m; -1s: never
	LoopToken    string   `yaml:"loop_token"`      // our CDN-Loop id (RFC 8586), shared by the nodes and tiers of a fleet; default strata
	// Elements with loop_token a request may already carry (tiers of
	// strata in front of this node); more: 508. Default 2; -1: none.
	LoopAllow int `yaml:"loop_allow"`
}

// Defaults of Cluster, from the proxy package.
const (
	DefaultPeerTimeout  = proxy.DefaultPeerTimeout
	DefaultPeerRetryFor = proxy.DefaultPeerRetryFor
	DefaultLoopToken    = proxy.DefaultLoopToken
	DefaultLoopAllow    = proxy.DefaultLoopAllow
)

func (c *Cluster) ensureDefaults() {
	c.Peers = nilIfEmpty(c.Peers)
	setDur(&c.PeerTimeout, DefaultPeerTimeout)
	setDur(&c.PeerRetryFor, DefaultPeerRetryFor)
	setStr(&c.LoopToken, DefaultLoopToken)
	setInt(&c.LoopAllow, DefaultLoopAllow)
}

func (c *Cluster) validate(ps *problems) {
	for i, p := range c.Peers {
		if err := ValidateOriginURL(p); err != nil {
			ps.add(fmt.Sprintf("cluster.peers[%d]", i), "%v (want the peer's admin listener, http://host:port)", err)
		}
	}
	if c.PeerTimeout.D() <= 0 {
		ps.add("cluster.peer_timeout", "must be positive")
	}
	lo := proxy.LoopOptions{Token: c.LoopToken}
	if err := lo.Validate(); err != nil {
		ps.add("cluster.loop_token", "%q is not an HTTP token", c.LoopToken)
	}
	if c.LoopAllow < -1 || c.LoopAllow > 64 {
		ps.add("cluster.loop_allow", "must be between -1 and 64, got %d", c.LoopAllow)
	}
}

func (c *Cluster) loopOptions() proxy.LoopOptions {
	return proxy.LoopOptions{Token: c.LoopToken, Allow: c.LoopAllow}
}

func (c *Cluster) peerOptions() proxy.PeerOptions {
	return proxy.PeerOptions{URLs: c.Peers, Timeout: c.PeerTimeout.D(), RetryFor: c.PeerRetryFor.D()}
}
