//go:build !race

package proxy

// poisonRecycled: see fillPool.
const poisonRecycled = false
