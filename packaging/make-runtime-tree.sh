#!/usr/bin/env bash
# Builds the agent's runtime root filesystem (the image's runtime stage): the binary (debug info
# stripped), every shared library it loads (ldd closure, with the dynamic loader), CA certificates,
# minimal /etc files, and the directories the chart mounts over. No shell, no package manager.
# Used by packaging/Dockerfile (build stage) and by packaging/build-image.sh / tests/deploy on an
# already-built binary.
#   make-runtime-tree.sh BINARY DEST      (DEST must not exist or be empty)
set -euo pipefail
bin=${1:?usage: make-runtime-tree.sh BINARY DEST}
dest=${2:?usage: make-runtime-tree.sh BINARY DEST}
[[ -x "$bin" ]] || { echo "make-runtime-tree: $bin is not an executable" >&2; exit 1; }
bin=$(readlink -f "$bin")
if [[ -e "$dest" && -n "$(ls -A "$dest")" ]]; then
  echo "make-runtime-tree: $dest is not empty" >&2
  exit 1
fi
ca_bundle=/etc/ssl/certs/ca-certificates.crt
[[ -s "$ca_bundle" ]] || { echo "make-runtime-tree: $ca_bundle missing (Debian package ca-certificates)" >&2; exit 1; }

mkdir -p "$dest"
cd "$dest"
# Debian 12 is merged-/usr: /lib, /lib64 and /bin are links into /usr, as in the build stage.
mkdir -p usr/bin usr/lib/x86_64-linux-gnu usr/lib64 usr/lib/ssl etc/ssl/certs etc/openkeel-node-agent \
  var/lib/openkeel-node-agent var/run/openvswitch run/netns tmp
ln -s usr/lib lib
ln -s usr/lib64 lib64
chmod 1777 tmp

strip --strip-debug -o usr/bin/openkeel-node-agent "$bin"
chmod 755 usr/bin/openkeel-node-agent

# Every library the loader resolves, at its real path, plus the soname link the loader asks for.
copy_lib() {
  local wanted=$1 real
  real=$(readlink -f "$wanted")
  mkdir -p ".$(dirname "$real")"
  [[ -e ".$real" ]] || cp -p "$real" ".$real"
  local link_dir
  link_dir=$(readlink -f "$(dirname "$wanted")")
  if [[ "$link_dir/$(basename "$wanted")" != "$real" && ! -e ".$link_dir/$(basename "$wanted")" ]]; then
    mkdir -p ".$link_dir"
    ln -s "$real" ".$link_dir/$(basename "$wanted")"   # absolute: resolved inside the tree
  fi
}
libs=$(ldd "$bin" | awk '/=> \//{print $3} /^\s*\/[^ ]+ \(/{print $1}')
for lib in $libs; do copy_lib "$lib"; done
# The PT_INTERP path (/lib64/ld-linux-x86-64.so.2) must resolve inside the tree.
interp=$(readelf -l "$bin" | sed -n 's/.*Requesting program interpreter: \(.*\)]/\1/p')
copy_lib "$interp"

# TLS: curl's and OpenSSL's default locations (Debian's), the one bundle.
cp "$ca_bundle" etc/ssl/certs/ca-certificates.crt
ln -s /etc/ssl/certs usr/lib/ssl/certs
ln -s /etc/ssl/certs/ca-certificates.crt usr/lib/ssl/cert.pem
# Name resolution (glibc's files and dns sources are built into libc.so.6 since 2.34) and a user
# database for getpwuid(0) ($HOME of clouds.yaml's search path).
printf 'hosts: files dns\n' >etc/nsswitch.conf
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\n' >etc/passwd
printf 'root:x:0:\n' >etc/group
mkdir -p root
echo "make-runtime-tree: $(find . -type f | wc -l) files, $(du -sh . | cut -f1) in $dest"
