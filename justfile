# Conveniences over the plain go commands in README.md; none is required.

# run every test (README's test command)
test:
    go test ./...

# sweep seeds of the default swarm: just sim 1000
sim seeds="1000":
    go run ./cmd/sluice sim --seeds {{seeds}}

# the mutation suite: each planted bug and the first seed that catches it
mutants:
    go run ./cmd/sluice sim mutants

# replay one seed with its trace: just replay 42
replay seed:
    go run ./cmd/sluice sim --seed {{seed}} --trace

# a seed's timeline in the browser: just timeline 31 (writes seed31.html)
timeline seed:
    go run ./cmd/sluice sim --seed {{seed}} --timeline seed{{seed}}.html

# where two seeds' traces first differ: just diff 3 4
diff a b:
    go run ./cmd/sluice sim diff {{a}} {{b}}

# benchmarks: the standard simulated world and the storage engine
bench:
    go test -run '^$' -bench . -benchtime 5x ./sim/world
    go test -run '^$' -bench . ./io/seglog ./sim/memfs

# many short amqp091-go connections at once, declarations accepted and refused, consumes, cancels: every call answered
stress-front conns="200" declares="100000" seed="1":
    SLUICE_STRESS_CONNS={{conns}} SLUICE_STRESS_DECLARES={{declares}} SLUICE_STRESS_SEED={{seed}} go test -count=1 -v -timeout 30m -run '^TestFrontDoorStress$' ./daemon | grep -E '(stress:|no answer|want|^--- |^ok|^FAIL)'

# real-disk benchmarks (fsio) against raw fdatasync baselines
bench-disk:
    go test -run '^$' -bench . -benchtime 2s ./fsio/...

# a single-node broker: AMQP on 127.0.0.1:5672, data in ./sluice-data (docs/daemon.md)
serve:
    go run ./cmd/sluice serve

# the single-node broker's confirmed publish rate and one-at-a-time confirm latency (amqp091-go)
bench-serve:
    go test -run '^$' -bench ConfirmedPublish -benchtime 30000x ./daemon
    go test -run '^$' -bench ConfirmLatency -benchtime 2000x ./daemon

# what routing through an exchange costs (fan-out to 1, 3, 10 queues) and an RPC reply queue's declare-to-delete cycle
bench-exchanges:
    go test -run '^$' -bench 'Fanout|ReplyQueue' -benchtime 5000x ./daemon

# the real-cluster tests alone: three sluice serve processes under kill -9, SIGSTOP and restarts
cluster-test:
    go test -count=1 -v -run 'TestOwnerKill|TestFollowerKill|TestFollowerPaused' ./daemon/clustertest

# kill -9 a random broker of three at random moments under confirmed load; no confirmed message may be lost.
# The seed is printed; just soak 100 7 replays seed 7; just soak 100 random draws a fresh one (crypto/rand).
soak cycles="100" seed="1":
    SLUICE_SOAK_CYCLES={{cycles}} SLUICE_SOAK_SEED={{seed}} go test -count=1 -v -timeout 120m -run '^TestSoak$' ./daemon/clustertest

# three brokers on this host, W = 2 fsynced, amqp091-go: confirmed msgs/s, p50/p99 confirm latency
# (128 B and 1 KiB), the owner-kill pause, side by side in one run with three RabbitMQ 3.10 nodes
# (Debian's rabbitmq-server, quorum queues; the benchmark starts and stops them) (docs/performance.md).
bench-daemon:
    #!/usr/bin/env bash
    set -euo pipefail
    if [ ! -x /usr/lib/rabbitmq/bin/rabbitmq-server ]; then
        apt-get update -qq
        apt-get install -y -qq rabbitmq-server > /dev/null
    fi
    # The package may have started its own node (5672, 25672, epmd's 4369): not beside the benchmark.
    # (pgrep, not `service rabbitmq-server status`: its CLI would leave an epmd behind.)
    if pgrep -u rabbitmq -x beam.smp > /dev/null; then service rabbitmq-server stop; fi
    go test -count=1 -run '^$' -bench 'Cluster|RabbitMQ' -benchtime 20000x ./daemon/clustertest

# failpoint tests on the real file system (enable, test, always disable)
failpoints:
    fsio/failpoint-test.sh

# format and vet
lint:
    gofmt -l $(git ls-files '*.go')
    go vet ./...

# what CI runs (installs Debian's chromium: run as root)
ci:
    bash .ci/run
