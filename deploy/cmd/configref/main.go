// Command configref writes the configuration reference, config.md, into
// the deploy folder it runs in (go generate ./deploy).
package main

import (
	"fmt"
	"os"

	"github.com/ambitkernel/ambit/deploy"
)

func main() {
	if err := deploy.WriteReference("."); err != nil {
		fmt.Fprintln(os.Stderr, "configref:", err)
		os.Exit(1)
	}
}
