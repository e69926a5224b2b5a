package clustertest

import (
	crand "crypto/rand"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"
)

// soakSeed is the soak's seed: SLUICE_SOAK_SEED, a number, or "random"
// for a fresh one from crypto/rand (never the clock); 1 without it, as CI
// runs it.
func soakSeed(t *testing.T) uint64 {
	t.Helper()
	v := os.Getenv("SLUICE_SOAK_SEED")
	switch v {
	case "":
		return 1
	case "random":
		var b [8]byte
		if _, err := crand.Read(b[:]); err != nil {
			t.Fatal(err)
		}
		return binary.LittleEndian.Uint64(b[:])
	}
	seed, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		t.Fatalf("SLUICE_SOAK_SEED=%q: want a number or random", v)
	}
	return seed
}

// soakCycles is SLUICE_SOAK_CYCLES, 3 without it.
func soakCycles(t *testing.T) int {
	t.Helper()
	v := os.Getenv("SLUICE_SOAK_CYCLES")
	if v == "" {
		return 3
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("SLUICE_SOAK_CYCLES=%q: want a positive number", v)
	}
	return n
}

// TestSoak: three brokers under 1,000 confirmed publishes a second; each
// cycle waits a random while, kills a random broker with SIGKILL (an
// owner of one queue and a follower of the others), restarts it after a
// random while, and waits until every queue serves again, in sync, and
// every publisher is confirmed again. At the end every confirmed message
// must be consumed and no nacked one. The moments and victims come from
// the printed seed.
func TestSoak(t *testing.T) {
	seed, cycles := soakSeed(t), soakCycles(t)
	t.Logf("soak: seed %d, %d cycles (rerun: SLUICE_SOAK_SEED=%d SLUICE_SOAK_CYCLES=%d go test -count=1 -run '^TestSoak$' -v ./daemon/clustertest)",
		seed, cycles, seed, cycles)
	rng := rand.New(rand.NewPCG(seed, 0x50a4))
	c := newCluster(t, 3)
	pubs := startPublishers(c, "soak")
	for _, p := range pubs {
		p.waitConfirmsAfter(t, time.Time{}, 100, 30*time.Second)
	}
	start := time.Now()
	var pauses []time.Duration
	for cycle := 1; cycle <= cycles; cycle++ {
		time.Sleep(time.Duration(rng.IntN(2500)+250) * time.Millisecond)
		victim := rng.IntN(len(c.brokers)) + 1
		down := time.Duration(rng.IntN(2000)) * time.Millisecond
		killedAt := time.Now()
		c.kill(victim)
		time.Sleep(down)
		c.start(victim)
		c.waitReady(victim, 30*time.Second)
		c.settle(victim, queues, 60*time.Second)
		var worst time.Duration
		for _, p := range pubs {
			p.waitConfirmsAfter(t, time.Now(), 20, 60*time.Second)
			if n, f := p.confirmsAfter(killedAt); n > 0 {
				worst = max(worst, f.Sub(killedAt))
			}
		}
		pauses = append(pauses, worst)
		conf, nack, unk := 0, 0, 0
		for _, p := range pubs {
			a, b, u := p.counts()
			conf, nack, unk = conf+a, nack+b, unk+u
		}
		t.Logf("cycle %d: killed n%d, down %v; serving again (every queue's first confirm within %v of the kill); %d confirmed, %d nacked, %d unknown so far",
			cycle, victim, down, worst.Round(time.Millisecond), conf, nack, unk)
	}
	stopPublishers(pubs)
	confirmed, nacked, unknown, missing := verify(t, c, pubs)
	t.Logf("soak: seed %d, %d cycles in %v: %d confirmed, %d of them not delivered; %d nacked; %d unknown outcomes",
		seed, cycles, time.Since(start).Round(time.Second), confirmed, missing, nacked, unknown)
}
