package cli

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// minParityFlag reads --min-parity in one of two forms that cannot be
// mistaken for each other: a percentage with its sign ("99.9%") or a
// fraction of one ("0.999"). A bare number above 1 is refused, since it
// could only be a percentage without its sign: "1" read as 1% instead of
// 100% is the misreading this prevents. A bare number is always read as
// the stricter of its two meanings.
type minParityFlag struct{ dst *float64 }

func (f minParityFlag) String() string {
	if f.dst == nil {
		return ""
	}
	return strconv.FormatFloat(*f.dst, 'f', -1, 64) + "%"
}

func (f minParityFlag) Set(v string) error {
	p, err := parseMinParity(v)
	if err != nil {
		return err
	}
	*f.dst = p
	return nil
}

// parseMinParity returns the minimum in percent. A fraction is scaled in
// exact decimals (math/big), not by a float multiplication, so that 0.999
// is 99.9 exactly and prints so.
func parseMinParity(v string) (float64, error) {
	s := strings.TrimSpace(v)
	pct, isPct := strings.CutSuffix(s, "%")
	if pct = strings.TrimSpace(pct); !isDecimal(pct) {
		return 0, errors.New("write a percentage such as 99.9% or a fraction such as 0.999")
	}
	p, _ := new(big.Rat).SetString(pct)
	hundred := big.NewRat(100, 1)
	if !isPct {
		if p.Cmp(hundred) > 0 {
			return 0, errors.New("a percentage is 0% to 100%, a fraction 0 to 1")
		} else if p.Cmp(big.NewRat(1, 1)) > 0 {
			fraction := new(big.Rat).Quo(p, hundred).FloatString(len(s) + 2)
			return 0, fmt.Errorf("a bare number is a fraction of 1, and %s is more than 1: write %s%% for %s percent (or %s as a fraction)",
				s, s, s, strings.TrimSuffix(strings.TrimRight(fraction, "0"), "."))
		}
		p.Mul(p, hundred)
	}
	if !new(big.Rat).Mul(p, big.NewRat(10_000, 1)).IsInt() {
		return 0, errors.New("finer than the report measures parity (0.0001%)")
	}
	if p.Cmp(hundred) > 0 {
		return 0, errors.New("a percentage is 0% to 100%, a fraction 0 to 1")
	}
	f, _ := p.Float64()
	return f, nil
}

// isDecimal reports whether s is digits with at most one decimal point.
func isDecimal(s string) bool {
	digits := 0
	point := false
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !point:
			point = true
		default:
			return false
		}
	}
	return digits > 0
}
