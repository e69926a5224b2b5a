// Command sluice is the Sluice broker's command line: `sluice sim --seed S`
// runs one simulated world, `sluice sim --seeds N` sweeps seeds, and
// `sluice serve` runs a broker (package daemon; single node today).
package main

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
)

const usage = `usage: sluice <command> [arguments]

commands:
  sim      run the deterministic simulator (sluice sim --help)
  serve    run a broker: AMQP 0-9-1 on 127.0.0.1:5672, data in ./sluice-data
  publish  publish messages to a queue with confirms (sluice publish --help)
  consume  consume and print a queue's messages (sluice consume --help)
  settings set a runtime setting on a running broker (sluice settings --help)
  describe list a running broker's queues, or only those in trouble, and why
           a fenced one is (its recovery attempts)
  recovery retry a fenced queue's recovery at once (sluice recovery --help)
  drain    mark a broker draining: no new queue is placed on it
  export   read a queue's intact records from a data directory (a fenced, damaged queue)
  help     show help: sluice help [command [subcommand]]

Exit status: 0 success, 1 a failure found (a checker, a coverage minimum, a
scenario not as expected), 2 bad usage or input, 3 seeds that timed out and no
failure, 130 interrupted (Ctrl-C).
`

// env is what a command runs against: its output, and a channel closed on
// the first Ctrl-C (nil in tests that do not interrupt).
type env struct {
	stdout, stderr io.Writer
	interrupt      <-chan struct{}
}

func main() {
	// The first Ctrl-C stops a run and prints what it has (a partial
	// summary); a second one ends the process as usual.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	interrupt := make(chan struct{})
	go func() {
		<-sig
		signal.Stop(sig)
		close(interrupt)
	}()
	os.Exit(run(os.Args[1:], env{stdout: os.Stdout, stderr: os.Stderr, interrupt: interrupt}))
}

// run is the command line's entry point: the arguments after the program
// name; it returns the exit status. Tests call it in-process.
func run(args []string, e env) int {
	if len(args) < 1 {
		fmt.Fprint(e.stderr, usage)
		return 2
	}
	switch args[0] {
	case "sim":
		// Simulated worlds allocate fast and die young; the machine has
		// memory to spare, so collect less often.
		debug.SetGCPercent(400)
		return runSim(args[1:], e)
	case "serve":
		return runServe(args[1:], e)
	case "publish":
		return runPublish(args[1:], e)
	case "consume":
		return runConsume(args[1:], e)
	case "settings":
		return runSettings(args[1:], e)
	case "describe":
		return runDescribe(args[1:], e)
	case "drain":
		return runDrain(args[1:], e)
	case "export":
		return runExport(args[1:], e)
	case "recovery":
		return runRecovery(args[1:], e)
	case "-h", "--help", "-help":
		fmt.Fprint(e.stdout, usage)
		return 0
	case "help":
		if len(args) == 1 {
			fmt.Fprint(e.stdout, usage)
			return 0
		}
		switch args[1] {
		case "serve":
			return runServe([]string{"--help"}, e)
		case "publish":
			return runPublish([]string{"--help"}, e)
		case "consume":
			return runConsume([]string{"--help"}, e)
		case "settings":
			return runSettings([]string{"--help"}, e)
		case "describe":
			return runDescribe([]string{"--help"}, e)
		case "drain":
			return runDrain([]string{"--help"}, e)
		case "export":
			return runExport([]string{"--help"}, e)
		case "recovery":
			return runRecovery([]string{"--help"}, e)
		}
		if args[1] == "sim" {
			// sluice help sim [subcommand] is sluice sim [subcommand] --help.
			return runSim(append(append([]string{}, args[2:]...), "--help"), e)
		}
		return usageError(e, "sluice help", "", fmt.Sprintf("unknown command %q%s", args[1], suggest(args[1], []string{"sim", "serve", "publish", "consume", "settings", "describe", "drain", "recovery"})))
	}
	return usageError(e, "sluice", "", fmt.Sprintf("unknown command %q%s", args[0], suggest(args[0], []string{"sim", "serve", "publish", "consume", "settings", "describe", "drain", "recovery", "help"})))
}

// usageError prints a bad-usage message naming the problem and where help
// is, and returns exit status 2.
func usageError(e env, cmd, helpCmd, msg string) int {
	fmt.Fprintf(e.stderr, "%s: %s\n", cmd, msg)
	if helpCmd == "" {
		helpCmd = "sluice --help"
	}
	fmt.Fprintf(e.stderr, "run '%s' for usage\n", helpCmd)
	return 2
}
