#!/usr/bin/env bash
# need.sh COMMAND:PACKAGE...: installs, with Debian's apt-get, the package of
# each command that is not on PATH, so that the deployment checks (promtool,
# prometheus, buildah, podman, systemd-analyze) run on a fresh machine with
# the project's own files. Where apt-get cannot run (not root, not Debian) it
# says what is missing and exits 3, which the callers report as a skip unless
# KVSHADOW_REQUIRE_DEPLOY_TOOLS=1 (set by .ci/run) makes it a failure.
set -uo pipefail
missing=()
for pair in "$@"; do
  cmd=${pair%%:*} pkg=${pair#*:}
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "need.sh: installing ${missing[*]} with apt-get" >&2
  if { apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
       { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; }; then
    exit 0
  fi
fi
echo "need.sh: ${missing[*]} missing and apt-get cannot install them here (root on Debian is needed)" >&2
exit 3
