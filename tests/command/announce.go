package command

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
)

// Announced starts cmd with its standard output and error on one pipe,
// copies each of their lines to log, and sends on the channel it returns
// re's first submatch in the first line that has one: where a server that
// binds a port of its own says it listens (a port picked and closed could
// be taken by another process before the server binds it, and the test
// would talk to whatever serves there).
func Announced(cmd *exec.Cmd, log io.Writer, re *regexp.Regexp) (<-chan string, error) {
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	err = cmd.Start()
	pw.Close()
	if err != nil {
		pr.Close()
		return nil, err
	}
	at := make(chan string, 1)
	go func() {
		defer pr.Close()
		for lines, said := bufio.NewScanner(pr), false; lines.Scan(); {
			fmt.Fprintln(log, lines.Text())
			if m := re.FindStringSubmatch(lines.Text()); m != nil && !said {
				said = true
				at <- m[1]
			}
		}
	}()
	return at, nil
}
