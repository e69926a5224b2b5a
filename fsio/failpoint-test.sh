#!/usr/bin/env bash
# Runs the failpoint tests of fsio and its crash tests at every failpoint
# boundary. failpoint-ctl rewrites the markers in fsio/ in place (stashing the
# originals); the EXIT trap always puts them back, whatever happens, and a
# leftover rewrite from an earlier run that was killed is undone first. The
# rewritten sources differ from the originals, so the build cache keeps the
# two builds apart: nothing rewritten leaks into an ordinary build.
#
# Usage: bash fsio/failpoint-test.sh [extra go test flags]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

dirs=(fsio)

restore() {
	go tool failpoint-ctl disable "${dirs[@]}" >/dev/null 2>&1 || true
	if compgen -G 'fsio/*__failpoint_stash__' >/dev/null || [[ -e fsio/binding__failpoint_binding__.go ]]; then
		echo "failpoint-test.sh: failpoint rewrite still in place in fsio/; run: go tool failpoint-ctl disable fsio" >&2
		return 1
	fi
}

restore
trap restore EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

go tool failpoint-ctl enable "${dirs[@]}"
SLUICE_REQUIRE_FAILPOINTS=1 go test -count=1 -timeout 5m "$@" ./fsio/...
