package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

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
	client := &http.Client{Timeout: 15 * time.Second}
	resp, err := client.PostForm("http://"+*addr+"/settings", url.Values{"key": {pos[1]}, "value": {pos[2]}})
	if err != nil {
		fmt.Fprintf(e.stderr, "sluice settings: %v\n", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(e.stderr, "sluice settings: %s: %s", resp.Status, body)
		return 1
	}
	e.stdout.Write(body)
	return 0
}
