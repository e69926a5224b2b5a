package world

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZProf(t *testing.T) {
	s := os.Getenv("ZPROF_SEEDS")
	if s == "" {
		t.Skip()
	}
	for _, f := range strings.Split(s, ",") {
		seed, _ := strconv.ParseUint(f, 10, 64)
		st := time.Now()
		r, err := Run(seed, DrawScale(seed), Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d failed=%d events=%d wall=%v profile=%s", seed, r.Failed, r.Events, time.Since(st), r.Profile)
	}
}
