//go:build ignore

// A generator: files tagged "ignore" are not part of the package and are
// not checked.
package main

import "os"

func main() { os.Exit(0) }
