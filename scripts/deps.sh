#!/usr/bin/env bash
# Installs every system package assay needs, with apt (Slurm and munge included:
# tests/slurm.sh runs a one-node cluster), and the npm packages of the WGSL backend's helper
# through its lockfile. Idempotent: when everything is present it only asks
# dpkg and returns in well under a second.
#
# Mesa's lavapipe (Vulkan on the CPU) must come from bookworm-backports (Mesa >= 24: Dawn
# refuses Mesa 22's): the suite is added to the machine's existing Debian source entry (its
# `Suites:` line), never as a mirror address of our own.
set -euo pipefail
cd "$(dirname "$0")/.."

PKGS=(
  build-essential make pkg-config
  libmpfr-dev libgmp-dev
  check
  gnuplot-nox
  python3 python3-numpy
  libopenblas-dev
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo
  libvulkan-dev libshaderc-dev vulkan-tools
  chromium
  slurm-wlm slurmctld slurmd slurm-client munge
)
BACKPORTS_PKGS=(mesa-vulkan-drivers)

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

# Mesa from backports: installed and at least version 24?
mesa_ok() {
  installed mesa-vulkan-drivers || return 1
  local v
  v=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers)
  dpkg --compare-versions "$v" ge 24
}

missing=()
for p in "${PKGS[@]}"; do installed "$p" || missing+=("$p"); done
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)

need_bp=0
mesa_ok || need_bp=1

if [ "${#missing[@]}" -gt 0 ] || [ $need_bp -eq 1 ]; then
  if [ $need_bp -eq 1 ]; then
    src=/etc/apt/sources.list.d/debian.sources
    if [ -f "$src" ]; then
      if ! grep -q 'bookworm-backports' "$src"; then
        echo "deps: adding bookworm-backports to the Suites: line of $src"
        # append to the first Suites: line that lists the plain `bookworm` suite
        $SUDO awk '!done && /^Suites:/ && (" " $0 " ") ~ / bookworm / { $0 = $0 " bookworm-backports"; done = 1 } { print }' \
          "$src" >"$src.assay-tmp" && $SUDO mv "$src.assay-tmp" "$src"
      fi
    elif [ -f /etc/apt/sources.list ] && ! grep -q 'bookworm-backports' /etc/apt/sources.list; then
      # one-line format: repeat the main entry's line with the backports suite
      line=$(grep -E '^deb .* bookworm( |$)' /etc/apt/sources.list | head -n 1)
      [ -n "$line" ] && echo "$line" | sed 's/ bookworm / bookworm-backports /; s/ bookworm$/ bookworm-backports/' | $SUDO tee -a /etc/apt/sources.list >/dev/null
    fi
  fi
  echo "deps: installing ${missing[*]} ${BACKPORTS_PKGS[*]}"
  $SUDO apt-get update -qq
  if [ "${#missing[@]}" -gt 0 ]; then
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  if [ $need_bp -eq 1 ]; then
    $SUDO apt-get install -y -qq --no-install-recommends -t bookworm-backports "${BACKPORTS_PKGS[@]}"
  fi
fi

# The WGSL backend's Node helper: npm packages pinned by its lockfile.
if [ -f compiler/wgsl/node/package-lock.json ] && [ ! -d compiler/wgsl/node/node_modules ]; then
  echo "deps: npm ci in compiler/wgsl/node"
  (cd compiler/wgsl/node && npm ci --no-audit --no-fund --loglevel=error)
fi
echo "deps: all packages present"
