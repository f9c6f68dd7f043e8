#!/usr/bin/env bash
# Runs every fuzz target of a module briefly: the untrusted inputs (keys,
# prefixes, cursors, stored JSON, HTTP requests) get a short coverage-guided
# pass on every test run. FUZZTIME sets the time per target.
set -euo pipefail
fuzztime=${FUZZTIME:-5s}
status=0
while IFS= read -r file; do
  dir=$(dirname "$file")
  for target in $(grep -oE '^func Fuzz[A-Za-z0-9_]+' "$file" | sed 's/^func //'); do
    echo "fuzz ./$dir $target ($fuzztime)"
    if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "./$dir" >/tmp/fuzz.$$.log 2>&1; then
      cat /tmp/fuzz.$$.log
      status=1
    fi
  done
done < <(git ls-files '*_test.go' | xargs grep -l '^func Fuzz' | grep -v '^tests/' || true)
rm -f /tmp/fuzz.$$.log
exit $status
