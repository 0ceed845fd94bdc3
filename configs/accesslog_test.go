package configs

import (
	"errors"
	"strings"
	"testing"
)

func TestAccessLogKeys(t *testing.T) {
	for _, tc := range []struct {
		yaml, problem string
		want          AccessLog
	}{
		{"", "", AccessLog{Format: "combined"}},
		{"access_log: {path: /var/log/strata/access.log}\n", "", AccessLog{Path: "/var/log/strata/access.log", Format: "combined"}},
		{"access_log: {path: \"-\", format: json}\n", "", AccessLog{Path: "-", Format: "json"}},
		{"access_log: {path: a.log, format: clf}\n", "t.yaml:3: access_log.format", AccessLog{}},
		{"access_log: {path: a.log, buffer: 10}\n", "buffer", AccessLog{}},
	} {
		y := "origins: [{url: http://o:80}]\ncache: {disk: {path: \"\"}}\n" + tc.yaml
		c, err := Load([]byte(y), "t.yaml")
		if err == nil {
			c.EnsureDefaults()
			err = c.Validate()
		}
		var ps Problems
		if errors.As(err, &ps) {
			err = ps.Locate([]byte(y), "t.yaml")
		}
		switch {
		case tc.problem == "" && err != nil:
			t.Errorf("%q: %v", tc.yaml, err)
		case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
			t.Errorf("%q: error %v, want it to mention %q", tc.yaml, err, tc.problem)
		case tc.problem == "" && c.AccessLog != tc.want:
			t.Errorf("%q: %+v, want %+v", tc.yaml, c.AccessLog, tc.want)
		}
	}
}
