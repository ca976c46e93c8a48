#!/usr/bin/env bash
# Installs every system package assay needs, with apt. Idempotent: when everything is
# already present it only runs `dpkg-query` and exits (well under a second).
set -euo pipefail

PKGS=(
  build-essential make pkg-config
  libmpfr-dev libgmp-dev
  check
  gnuplot-nox
  python3 python3-numpy
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "deps: all ${#PKGS[@]} packages present"
  exit 0
fi

echo "deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
