package main

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/sluicemq/sluice/core/metadata"
)

const settingsAbout = `Sets a runtime setting: the broker commits it through its metadata group
and answers once it is applied. The broker's HTTP address is --http-addr of
sluice serve. Exit status 1 if the broker refuses it or cannot say.

Settings:
%s
Example:
  sluice settings set liveness.expiry_ms 5000
`

func runSettings(args []string, e env) int {
	var known strings.Builder
	for _, s := range metadata.Settings {
		fmt.Fprintf(&known, "  %-36s %s (default %d, %d to %d)\n", s.Key, s.Doc, s.Default, s.Min, s.Max)
	}
	c := newCommand("sluice settings", "sluice settings set KEY VALUE [--http HOST:PORT]", fmt.Sprintf(settingsAbout, known.String()))
	addr := c.fs.String("http", "127.0.0.1:15692", "the broker's HTTP address (sluice serve --http-addr)")
	pos, status, done := c.parse(e, args)
	if done {
		return status
	}
	if len(pos) != 3 || pos[0] != "set" {
		return c.fail(e, "want: set KEY VALUE")
	}
	if _, err := metadata.ParseSetting(pos[1], pos[2]); err != nil {
		return c.fail(e, err.Error())
	}
	return postAdmin(e, "sluice settings", *addr, "/settings", url.Values{"key": {pos[1]}, "value": {pos[2]}})
}
