#!/usr/bin/env bash
# Builds the openkeel-node-agent OCI image with buildah (vfs storage driver, chroot isolation: no
# daemon, no overlay, no user namespaces needed). Run as root.
#   build-image.sh [--binary PATH]   the runtime image from an already-built binary (default
#                                    build/agent/openkeel-node-agent): no compilation, seconds
#   build-image.sh --full            packaging/Dockerfile, both stages; the Debian 12 base image is
#                                    made by mmdebstrap from the Debian mirror apt uses (no image
#                                    registry needed)
# The image is reproducible: the same binary (and the same commit) gives the same image id (every
# timestamp is SOURCE_DATE_EPOCH, default the commit's time, else 0), and carries the OCI labels
# version, revision (the commit) and source. Its default name is the one the chart's default
# image.repository resolves to (openkeel/openkeel-node-agent:<appVersion> is
# docker.io/openkeel/openkeel-node-agent:<appVersion> to a container runtime), so an image
# imported on a node (ctr -n k8s.io images import) is found with imagePullPolicy IfNotPresent.
# Environment: OKNA_IMAGE (default docker.io/openkeel/openkeel-node-agent:<version>),
#   OKNA_BUILDAH_ROOT (default build/buildah: the image store, kept out of /var/lib/containers),
#   OKNA_IMAGE_ARCHIVE (if set, the image is also written there as an oci-archive).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^project(openkeel-node-agent VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
image=${OKNA_IMAGE:-docker.io/openkeel/openkeel-node-agent:$version}
revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
epoch=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || echo 0)}
reproducible=(--timestamp "$epoch"
  --label "org.opencontainers.image.title=openkeel-node-agent"
  --label "org.opencontainers.image.version=$version"
  --label "org.opencontainers.image.revision=$revision"
  --label "org.opencontainers.image.source=${OKNA_IMAGE_SOURCE:-openkeel-node-agent}")
store=${OKNA_BUILDAH_ROOT:-$root/build/buildah}
bh=(buildah --root "$store/root" --runroot "$store/run" --storage-driver vfs)
mode=prebuilt
binary=$root/build/agent/openkeel-node-agent
while (($#)); do
  case $1 in
    --full) mode=full ;;
    --binary) binary=$2; shift ;;
    *) echo "usage: build-image.sh [--binary PATH | --full]" >&2; exit 2 ;;
  esac
  shift
done

if [[ $mode == prebuilt ]]; then
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  bash "$root/packaging/make-runtime-tree.sh" "$binary" "$ctx/rootfs"
  "${bh[@]}" bud --isolation chroot --layers=false "${reproducible[@]}" \
    -f "$root/packaging/Containerfile.runtime" -t "$image" "$ctx"
else
  base=localhost/debian:bookworm
  if ! "${bh[@]}" inspect --type image "$base" >/dev/null 2>&1; then
    tarball=$(mktemp --suffix=.tar)
    trap 'rm -f "$tarball"' EXIT
    mmdebstrap --variant=minbase bookworm "$tarball"
    ctr=$("${bh[@]}" from scratch)
    mnt=$("${bh[@]}" mount "$ctr")
    tar -C "$mnt" -xf "$tarball"
    "${bh[@]}" umount "$ctr"
    "${bh[@]}" commit --rm "$ctr" "$base"
  fi
  "${bh[@]}" bud --isolation chroot --layers=false "${reproducible[@]}" --build-arg BASE="$base" \
    -f "$root/packaging/Dockerfile" -t "$image" "$root"
fi
if [[ -n "${OKNA_IMAGE_ARCHIVE:-}" ]]; then
  "${bh[@]}" push "$image" "oci-archive:$OKNA_IMAGE_ARCHIVE:$image"
fi
"${bh[@]}" images --format '{{.Name}}:{{.Tag}} {{.ID}} {{.Size}}' "$image"
