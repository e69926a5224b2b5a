module github.com/sluicemq/sluice

go 1.26.8

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/chromedp/chromedp v0.23.0
	github.com/pingcap/failpoint v0.0.0-20240528011301-b51a646c7c86
	lukechampine.com/blake3 v1.4.1
	pgregory.net/rapid v1.3.0
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/klauspost/cpuid/v2 v2.0.9 // indirect
	github.com/pingcap/errors v0.11.4 // indirect
	github.com/sergi/go-diff v1.1.0 // indirect
	github.com/stretchr/testify v1.12.1 // indirect
)

tool github.com/pingcap/failpoint/failpoint-ctl
