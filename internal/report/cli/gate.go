package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// gateDecimals is the finest minimum the gate takes, in decimals of a
// percentage: the report computes parity to 0.0001%.
const gateDecimals = 4

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

// parseMinParity returns the minimum in percent. The fraction is converted
// by moving its decimal point, not by multiplying, so that 0.999 is 99.9
// exactly and prints so.
func parseMinParity(v string) (float64, error) {
	s := strings.TrimSpace(v)
	pct, isPct := strings.CutSuffix(s, "%")
	pct = strings.TrimSpace(pct)
	if !isPct {
		if !isDecimal(s) {
			return 0, errors.New("write a percentage such as 99.9% or a fraction such as 0.999")
		}
		if f, _ := strconv.ParseFloat(s, 64); f > 100 {
			return 0, errors.New("a percentage is 0% to 100%, a fraction 0 to 1")
		} else if f > 1 {
			return 0, fmt.Errorf("a bare number is a fraction of 1, and %s is more than 1: write %s%% for %s percent (or %s as a fraction)",
				s, s, s, fractionOf(s))
		}
		pct = shiftPoint(s, 2)
	}
	if !isDecimal(pct) {
		return 0, errors.New("write a percentage such as 99.9% or a fraction such as 0.999")
	}
	if _, frac, ok := strings.Cut(pct, "."); ok && len(strings.TrimRight(frac, "0")) > gateDecimals {
		return 0, errors.New("finer than the report measures parity (0.0001%)")
	}
	p, err := strconv.ParseFloat(pct, 64)
	if err != nil || p < 0 || p > 100 {
		return 0, errors.New("a percentage is 0% to 100%, a fraction 0 to 1")
	}
	return p, nil
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

// shiftPoint moves the decimal point of the decimal s by n places to the
// right: shiftPoint("0.999", 2) is "99.9".
func shiftPoint(s string, n int) string {
	whole, frac, _ := strings.Cut(s, ".")
	frac += strings.Repeat("0", max(n-len(frac), 0))
	whole, frac = whole+frac[:n], frac[n:]
	whole = strings.TrimLeft(whole, "0")
	if whole == "" {
		whole = "0"
	}
	if frac = strings.TrimRight(frac, "0"); frac != "" {
		return whole + "." + frac
	}
	return whole
}

// fractionOf is the fraction a percentage stands for: "99.9" -> "0.999".
func fractionOf(pct string) string {
	whole, frac, _ := strings.Cut(pct, ".")
	whole = strings.Repeat("0", max(3-len(whole), 0)) + whole
	head, tail := whole[:len(whole)-2], whole[len(whole)-2:]
	head = strings.TrimLeft(head, "0")
	if head == "" {
		head = "0"
	}
	if rest := strings.TrimRight(tail+frac, "0"); rest != "" {
		return head + "." + rest
	}
	return head
}
