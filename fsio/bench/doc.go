// Package bench holds the real-disk benchmarks of the storage path: raw
// pwrite+fdatasync, raw with a second write of header copies in the same
// fdatasync (the floor of seglog's format v2), a minimal hand-rolled group
// commit over raw files, and the segment log (io/seglog) on fsio, all in
// one run so that the baselines and the log are measured on the same disk
// at the same time. It has no
// exported API; see bench_test.go and docs/storage.md.
//
//	go test ./fsio/bench -run '^$' -bench . -benchtime 2s
//	SLUICE_BENCH_BIG=1 go test ./fsio/bench -run '^$' -bench Recovery   # 1 GiB log
//
// The benchmarks write under SLUICE_BENCH_DIR if set (to measure a given
// disk), else under the test's temporary directory.
package bench
