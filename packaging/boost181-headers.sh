#!/usr/bin/env bash
# Unpacks Debian 12's Boost 1.81 headers (libboost1.81-dev) into a private prefix, for
# tests/run-all.sh's build of core/ and its unit tests against the next Boost: libboost1.81-dev
# conflicts with the installed 1.74 -dev packages, so it is not installed, only unpacked.
#   boost181-headers.sh DIR   prints the prefix (DIR/usr), whose lib/*/cmake has BoostConfig
# The .deb is kept in ${XDG_CACHE_HOME:-~/.cache}/openkeel-node-agent, so a second clone does not
# download it again.
set -euo pipefail
dest=$1
pkg=libboost1.81-dev
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
if [[ ! -f "$dest/usr/include/boost/version.hpp" ]]; then
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/openkeel-node-agent
  mkdir -p "$cache"
  version=$(apt-cache policy "$pkg" | sed -n 's/^ *Candidate: *//p')
  if [[ -z "$version" || "$version" == "(none)" ]]; then
    apt-get update -qq >&2
    version=$(apt-cache policy "$pkg" | sed -n 's/^ *Candidate: *//p')
  fi
  deb=$(compgen -G "$cache/${pkg}_${version//:/%3a}_*.deb" || true)
  if [[ -z "$deb" ]]; then
    (cd "$cache" && apt-get download -qq "$pkg=$version" >&2)
    deb=$(compgen -G "$cache/${pkg}_${version//:/%3a}_*.deb")
  fi
  # Only the headers and the CMake package files (the .deb also holds static libraries).
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$dest" --wildcards ./usr/include "./usr/lib/*/cmake"
fi
grep -q '#define BOOST_VERSION 1081' "$dest/usr/include/boost/version.hpp" ||
  { echo "boost181-headers: $dest/usr/include/boost/version.hpp is not Boost 1.81" >&2; exit 1; }
echo "$dest/usr"
