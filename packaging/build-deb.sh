#!/usr/bin/env bash
# build-deb.sh BINARY DEB_VERSION OUTDIR — stages the gbdmpc package and builds it with dpkg-deb.
#
# `make deb` calls it with a binary built for the package (stripped, Debian's hardening flags for
# the cgo parts). The runtime dependencies are computed by dpkg-shlibdeps from the libraries the
# binary links (Ipopt, CBC, libstdc++, libc), so a change of solver library changes Depends by
# itself. Writes OUTDIR/gbdmpc_<DEB_VERSION>_<arch>.deb and prints its path.
set -euo pipefail
umask 022

if [ $# -ne 3 ]; then
	echo "usage: $0 BINARY DEB_VERSION OUTDIR" >&2
	exit 2
fi
bin=$1 version=$2 outdir=$3
src=$(cd "$(dirname "$0")/.." && pwd)
arch=$(dpkg --print-architecture)

# Maintainer: the Debian convention (DEBFULLNAME, DEBEMAIL), else the author of the commit built.
maintainer="${DEBFULLNAME:-}${DEBEMAIL:+ <$DEBEMAIL>}"
if [ -z "${DEBEMAIL:-}" ]; then
	maintainer=$(git -C "$src" log -1 --format='%an <%ae>' 2>/dev/null || echo "gbdmpc maintainers <root@localhost>")
fi
date_rfc=$(date -u -R -d "@${SOURCE_DATE_EPOCH:-$(git -C "$src" log -1 --format=%ct 2>/dev/null || date +%s)}")

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# dpkg-shlibdeps wants the package tree at debian/<package> beside a debian/control.
root=$work/debian/gbdmpc
mkdir -p "$root/DEBIAN"

install -D -m 0755 "$bin" "$root/usr/bin/gbdmpc"
# The compilers' identification strings are of no use at run time (dh_strip drops them too).
objcopy --remove-section=.comment "$root/usr/bin/gbdmpc"
install -D -m 0644 "$src/systemd/gbdmpc.service" "$root/lib/systemd/system/gbdmpc.service"
# The conffile: the external-broker example, which the operator must edit (broker, plants, policy).
install -D -m 0644 "$src/configs/pumpstation-external.yaml" "$root/etc/gbdmpc/config.yaml"
install -d -m 0755 "$root/var/lib/gbdmpc/decisions"

share=$root/usr/share/gbdmpc
install -D -m 0644 -t "$share" "$src/systemd/gbdmpc-alerts.yml" "$src/systemd/gbdmpc-alerts.test.yml" \
	"$src/systemd/gbdmpc-dashboard.json"

doc=$root/usr/share/doc/gbdmpc
install -D -m 0644 "$src/systemd/README.md" "$doc/README.md"
install -D -m 0644 -t "$doc/examples" "$src/configs/pumpstation-external.yaml" \
	"$src/configs/pumpstation-embedded.yaml" "$src/configs/synthesis.yaml" "$src/systemd/mosquitto-acl.conf"
go version -m "$bin" | awk '$1 == "dep" { print "  " $2 " " $3 }' >"$work/modules"
sed -e "s|@MAINTAINER@|$maintainer|" -e "s|@YEAR@|$(date -u -d "$date_rfc" +%Y)|" -e "/@GO_MODULES@/{r $work/modules" -e "d}" \
	"$src/packaging/debian/copyright.in" >"$doc/copyright"
chmod 0644 "$doc/copyright"
# A native package's changelog: one entry for the version built.
{
	printf 'gbdmpc (%s) unstable; urgency=medium\n\n' "$version"
	printf '  * Built from commit %s.\n\n' "$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)"
	printf ' -- %s  %s\n' "$maintainer" "$date_rfc"
} | gzip -9n >"$doc/changelog.gz"

man=$root/usr/share/man/man1
mkdir -p "$man"
sed -e "s|@VERSION@|$version|" -e "s|@DATE@|$(date -u -d "$date_rfc" +%Y-%m-%d)|" "$src/packaging/gbdmpc.1" |
	gzip -9n >"$man/gbdmpc.1.gz"

install -m 0755 -t "$root/DEBIAN" "$src/packaging/debian/postinst" "$src/packaging/debian/prerm" \
	"$src/packaging/debian/postrm"
echo /etc/gbdmpc/config.yaml >"$root/DEBIAN/conffiles"

printf 'Source: gbdmpc\n\nPackage: gbdmpc\nArchitecture: %s\n' "$arch" >"$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O debian/gbdmpc/usr/bin/gbdmpc | sed -n 's/^shlibs:Depends=//p')
if [ -z "$shlibs" ]; then
	echo "build-deb: dpkg-shlibdeps found no shared-library dependencies" >&2
	exit 1
fi
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
sed -e "s|@VERSION@|$version|" -e "s|@ARCH@|$arch|" -e "s|@MAINTAINER@|$maintainer|" \
	-e "s|@INSTALLED_SIZE@|$size|" -e "s|@SHLIBS@|$shlibs|" "$src/packaging/debian/control.in" >"$root/DEBIAN/control"

# md5sums of everything but the conffiles (dpkg keeps those in its own database).
(cd "$root" && find . -type f ! -path './DEBIAN/*' ! -path './etc/*' -printf '%P\0' | sort -z |
	xargs -0 md5sum) >"$root/DEBIAN/md5sums"
chmod 0644 "$root/DEBIAN/md5sums" "$root/DEBIAN/control" "$root/DEBIAN/conffiles"

mkdir -p "$outdir"
deb=$outdir/gbdmpc_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "$deb"
