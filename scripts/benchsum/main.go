// Command benchsum reads the output of `go test -bench` run with -count N
// (files named on the command line, or stdin) and prints, for every
// benchmark and every metric it reports, the minimum, median and maximum
// over the runs, for `make bench`. Each -diff A=B adds the metrics of
// benchmark A less those of its baseline B, run by run (the i-th run of
// each), so that what a layer adds over the store it wraps reads as one
// line: for example -diff 'dualwrite.Overhead/Put/dualwrite=dualwrite.Overhead/Put/memory'.
// A benchmark is named by its package's last element, a dot, and its name
// without "Benchmark" and the -GOMAXPROCS suffix.
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

func main() {
	var pairs []string
	flag.Func("diff", "A=B: also print A's metrics less B's, run by run (repeatable)", func(v string) error {
		pairs = append(pairs, v)
		return nil
	})
	flag.Parse()
	if err := run(flag.Args(), pairs); err != nil {
		fmt.Fprintln(os.Stderr, "benchsum:", err)
		os.Exit(2)
	}
}

func run(inputs []string, pairs []string) error {
	set := newResults()
	if len(inputs) == 0 {
		inputs = []string{"-"}
	}
	for _, name := range inputs {
		if err := readInput(set, name); err != nil {
			return err
		}
	}
	for _, p := range pairs {
		a, b, ok := strings.Cut(p, "=")
		if !ok {
			return fmt.Errorf("-diff %q: want A=B", p)
		}
		if err := set.diff(a, b); err != nil {
			return err
		}
	}
	return set.print(os.Stdout)
}

func readInput(set *results, name string) error {
	if name == "-" {
		return set.read(os.Stdin)
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	return set.read(f)
}

// bench is one benchmark's runs: for each metric, its value in each run.
type bench struct {
	name    string
	units   []string // in the order the benchmark reports them
	samples map[string][]float64
}

type results struct {
	order  []string
	byName map[string]*bench
}

func newResults() *results { return &results{byName: map[string]*bench{}} }

func (r *results) get(name string) *bench {
	b, ok := r.byName[name]
	if !ok {
		b = &bench{name: name, samples: map[string][]float64{}}
		r.byName[name] = b
		r.order = append(r.order, name)
	}
	return b
}

func (b *bench) add(unit string, v float64) {
	if _, ok := b.samples[unit]; !ok {
		b.units = append(b.units, unit)
	}
	b.samples[unit] = append(b.samples[unit], v)
}

// procs is the -GOMAXPROCS suffix go test adds to a benchmark's name.
var procs = regexp.MustCompile(`-\d+$`)

// read takes the benchmark lines of go test's output; any other line (the
// pkg: header excepted) is ignored, as go test prints logs among them.
func (r *results) read(in io.Reader) error {
	pkg := ""
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = path.Base(strings.TrimSpace(rest))
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		if _, err := strconv.ParseInt(f[1], 10, 64); err != nil {
			continue // a log line that starts with a benchmark's name
		}
		name := procs.ReplaceAllString(strings.TrimPrefix(f[0], "Benchmark"), "")
		if pkg != "" {
			name = pkg + "." + name
		}
		b := r.get(name)
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return fmt.Errorf("%s: %q is not a number", f[0], f[i])
			}
			b.add(f[i+1], v)
		}
	}
	return sc.Err()
}

// diff adds "A - B": each metric both report, run by run, over the runs
// both have.
func (r *results) diff(a, b string) error {
	x, y := r.byName[a], r.byName[b]
	if x == nil || y == nil {
		return fmt.Errorf("-diff %s=%s: no such benchmark in the input", a, b)
	}
	d := r.get(a + " - " + strings.TrimPrefix(b, pkgOf(a)))
	for _, unit := range x.units {
		ys, ok := y.samples[unit]
		if !ok {
			continue
		}
		xs := x.samples[unit]
		for i := range min(len(xs), len(ys)) {
			d.add(unit, xs[i]-ys[i])
		}
	}
	if len(d.units) == 0 {
		return errors.New("-diff " + a + "=" + b + ": no metric in common")
	}
	return nil
}

// pkgOf is the "pkg." prefix of a benchmark's name, if any.
func pkgOf(name string) string {
	if p, _, ok := strings.Cut(name, "."); ok {
		return p + "."
	}
	return ""
}

func (r *results) print(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "benchmark\tmetric\tmin\tmedian\tmax\truns\t")
	for _, name := range r.order {
		b := r.byName[name]
		for _, unit := range b.units {
			lo, mid, hi := summary(b.samples[unit])
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%d\t\n", name, unit, format(lo), format(mid), format(hi), len(b.samples[unit]))
		}
	}
	return w.Flush()
}

// summary is the minimum, median (the mean of the middle two of an even
// count) and maximum of vs, which is not empty.
func summary(vs []float64) (lo, mid, hi float64) {
	s := slices.Clone(vs)
	slices.Sort(s)
	n := len(s)
	mid = s[n/2]
	if n%2 == 0 {
		mid = (s[n/2-1] + s[n/2]) / 2
	}
	return s[0], mid, s[n-1]
}

// format prints a value with four significant digits, whole numbers
// above 10,000 in full.
func format(v float64) string {
	if v == float64(int64(v)) || v >= 1e4 || v <= -1e4 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
