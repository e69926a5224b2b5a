// Command sluice is the Sluice broker's command line. Today it runs the
// deterministic simulator: `sluice sim --seed S` runs one world,
// `sluice sim --seeds N` sweeps seeds. The daemon comes with a later issue.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
)

const usage = `usage: sluice <command> [flags]

commands:
  sim    run the deterministic simulator (sluice sim --help)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "sim":
		// Simulated worlds allocate fast and die young; the machine has
		// memory to spare, so collect less often.
		debug.SetGCPercent(400)
		os.Exit(runSim(os.Args[2:], os.Stdout, os.Stderr))
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "sluice: unknown command %q\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}
