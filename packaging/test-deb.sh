#!/usr/bin/env bash
# test-deb.sh DEB — installs the gbdmpc package on this machine as an operator would
# (apt-get install ./gbdmpc_….deb), checks what it installed, runs the daemon as its user against
# the simulated plant, then removes and purges it and checks that nothing is left. `make test-deb`
# runs it (and `make test`, which CI runs as root on a fresh Debian 12).
#
# It changes the machine, so it runs only as root and only when the machine has no gbdmpc of its
# own (package, user, group, /etc/gbdmpc, /var/lib/gbdmpc); otherwise it says why and skips. Whatever
# fails, the exit trap purges what the test installed.
set -euo pipefail

if [ $# -ne 1 ] || [ ! -f "$1" ]; then
	echo "usage: $0 gbdmpc_VERSION_ARCH.deb" >&2
	exit 2
fi
deb=$(readlink -f "$1")
version=$(dpkg-deb -f "$deb" Version)

skip() {
	echo "test-deb: SKIPPED: $*"
	exit 0
}
[ "$(id -u)" -eq 0 ] || skip "installing a package needs root (run: sudo make test-deb)"
if dpkg-query -W -f='${db:Status-Status}' gbdmpc 2>/dev/null | grep -qv '^not-installed$'; then
	skip "a gbdmpc package is already on this machine; the test would replace and purge it"
fi
getent passwd gbdmpc >/dev/null && skip "a user gbdmpc exists already; purge would delete it"
getent group gbdmpc >/dev/null && skip "a group gbdmpc exists already; purge would delete it"
for d in /etc/gbdmpc /var/lib/gbdmpc; do
	[ -e "$d" ] && skip "$d exists already (a manual installation?); purge would delete it"
done

passed=0 failed=0
check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@" >/dev/null 2>&1; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "FAIL: $what ($*)"
	fi
}
absent() { ! test -e "$1" && ! test -L "$1"; }
owner() { [ "$(stat -c '%U:%G %a' "$1")" = "$2" ]; }

export DEBIAN_FRONTEND=noninteractive
apt=(apt-get -y -qq -o DPkg::Lock::Timeout=300)
work=$(mktemp -d)
daemon=""
cleanup() {
	local rc=$?
	if [ -n "$daemon" ] && kill -0 "$daemon" 2>/dev/null; then
		kill "$daemon" 2>/dev/null || true
		wait "$daemon" 2>/dev/null || true
	fi
	if dpkg-query -W -f='${db:Status-Status}' gbdmpc 2>/dev/null | grep -qv '^not-installed$'; then
		echo "test-deb: purging gbdmpc to restore the machine"
		"${apt[@]}" purge gbdmpc >/dev/null 2>&1 || dpkg --purge gbdmpc || true
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
start=$SECONDS

echo "test-deb: apt-get install $deb"
"${apt[@]}" install "$deb" >"$work/install.log" 2>&1 || {
	cat "$work/install.log"
	echo "FAIL: apt-get install"
	exit 1
}

# Files, and the conffile registered as one.
for f in /usr/bin/gbdmpc /lib/systemd/system/gbdmpc.service /etc/gbdmpc/config.yaml \
	/usr/share/gbdmpc/gbdmpc-alerts.yml /usr/share/gbdmpc/gbdmpc-alerts.test.yml \
	/usr/share/gbdmpc/gbdmpc-dashboard.json /usr/share/man/man1/gbdmpc.1.gz \
	/usr/share/doc/gbdmpc/README.md /usr/share/doc/gbdmpc/copyright /usr/share/doc/gbdmpc/changelog.gz \
	/usr/share/doc/gbdmpc/examples/pumpstation-external.yaml; do
	check "installed $f" test -f "$f"
done
check "gbdmpc executable" test -x /usr/bin/gbdmpc
check "config.yaml is a conffile" sh -c "dpkg-query -W -f='\${Conffiles}' gbdmpc | grep -q '^ /etc/gbdmpc/config.yaml '"

# The user, its group, and who owns what.
check "system user gbdmpc" sh -c '[ "$(getent passwd gbdmpc | cut -d: -f3)" -lt 1000 ]'
check "user gbdmpc cannot log in" sh -c 'getent passwd gbdmpc | cut -d: -f7 | grep -q nologin'
check "group gbdmpc" getent group gbdmpc
check "/etc/gbdmpc root:gbdmpc 750" owner /etc/gbdmpc "root:gbdmpc 750"
check "config.yaml root:gbdmpc 640" owner /etc/gbdmpc/config.yaml "root:gbdmpc 640"
check "/var/lib/gbdmpc gbdmpc 750" owner /var/lib/gbdmpc "gbdmpc:gbdmpc 750"
check "/var/lib/gbdmpc/decisions gbdmpc 750" owner /var/lib/gbdmpc/decisions "gbdmpc:gbdmpc 750"

# Installed, not enabled, not started: the example configuration is not edited yet.
check "unit not enabled on install" absent /etc/systemd/system/multi-user.target.wants/gbdmpc.service

# The binary: its version is the package's, and its libraries load for the service user.
/usr/bin/gbdmpc version >"$work/version" 2>&1 || true
cat "$work/version"
check "gbdmpc version runs" /usr/bin/gbdmpc version
check "gbdmpc --version runs as gbdmpc" runuser -u gbdmpc -- /usr/bin/gbdmpc --version
check "version names Ipopt and CBC" sh -c "grep -q '^ipopt: ' $work/version && grep -q '^cbc: ' $work/version"
check "man page" man -w gbdmpc
# The cbc master solves in worker processes: the installed binary started again as the service user.
pump='{"v":1,"level_m":3.0,"pumps_on":[0,1,0],"demand_m3h":[80,80,80,80,80,80,80,80,80,80,80,80,80,80,80,80],"price_eur_kwh":[0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2,0.2]}'
check "a cbc-master solve runs its CBC worker as gbdmpc" sh -c \
	"echo '$pump' | runuser -u gbdmpc -- /usr/bin/gbdmpc solve --plant pumpstation --master cbc | grep -q '\"status\":\"optimal\"'"

# The unit as systemd reads it (offline: PID 1 need not be systemd).
check "systemd-analyze verify" systemd-analyze verify /lib/systemd/system/gbdmpc.service
systemd-analyze verify /lib/systemd/system/gbdmpc.service 2>&1 | sed 's/^/  verify: /'

# The example as shipped is refused at once, with a reason, rather than run against a broker that
# does not exist: that is what the operator sees when starting before editing.
if runuser -u gbdmpc -- /usr/bin/gbdmpc serve --config /etc/gbdmpc/config.yaml >"$work/unedited.log" 2>&1; then
	check "the unedited example is refused" false
else
	check "the unedited example is refused with a reason, not a permission error" \
		sh -c "! grep -qi 'permission denied' $work/unedited.log && test -s $work/unedited.log"
fi
sed 's/^/  unedited config: /' "$work/unedited.log" | head -3

# The daemon as its user with a working configuration: the embedded broker on a free port, the
# decision log in the package's directory; two periods of the simulated pump station through MQTT.
cat >"$work/config.yaml" <<'EOF'
broker: {embedded: true, listen: "127.0.0.1:0"}
http: {listen: "off"}
log: {level: info, format: json}
decision_log: {dir: /var/lib/gbdmpc/decisions, fsync: always}
plants:
  - {id: pump1, family: pumpstation, period: 1s, deadline: 800ms, max_age: 2s, master: enum}
EOF
chmod 0644 "$work/config.yaml"
chmod 0755 "$work"
# setpriv execs the daemon itself (runuser would stay as its parent and report SIGTERM as its own).
setpriv --reuid=gbdmpc --regid=gbdmpc --init-groups /usr/bin/gbdmpc serve --config "$work/config.yaml" \
	>"$work/serve.log" 2>&1 &
daemon=$!
broker=""
for _ in $(seq 1 300); do
	broker=$(sed -n 's/.*"msg":"ready".*"broker":"\([^"]*\)".*/\1/p' "$work/serve.log")
	[ -n "$broker" ] || ! kill -0 "$daemon" 2>/dev/null && break
	sleep 0.1
done
if [ -z "$broker" ]; then
	check "daemon ready as user gbdmpc" false
	tail -5 "$work/serve.log"
else
	check "daemon ready as user gbdmpc" true
	check "simulated plant gets actions" /usr/bin/gbdmpc simulate --plant pumpstation --mqtt "$broker" \
		--steps 2 --out "$work/sim"
	kill -TERM "$daemon"
	check "daemon stops cleanly on SIGTERM" wait "$daemon"
	daemon=""
	check "decision log written by gbdmpc" sh -c \
		"find /var/lib/gbdmpc/decisions -type f -user gbdmpc | grep -q ."
fi

# Enabled by the operator, then removed: configuration, logs and user stay, the unit goes.
check "systemctl enable (offline)" systemctl enable gbdmpc.service
check "enabled" test -L /etc/systemd/system/multi-user.target.wants/gbdmpc.service
"${apt[@]}" remove gbdmpc >"$work/remove.log" 2>&1 || {
	cat "$work/remove.log"
	check "apt-get remove" false
}
check "remove: binary gone" absent /usr/bin/gbdmpc
check "remove: unit gone" absent /lib/systemd/system/gbdmpc.service
check "remove: config kept" test -f /etc/gbdmpc/config.yaml
check "remove: user kept" getent passwd gbdmpc

# Purge: nothing of the package remains.
"${apt[@]}" purge gbdmpc >"$work/purge.log" 2>&1 || {
	cat "$work/purge.log"
	check "apt-get purge" false
}
check "purge: package gone" sh -c "! dpkg-query -W -f='\${db:Status-Status}' gbdmpc 2>/dev/null | grep -qv '^not-installed$'"
check "purge: no user" sh -c '! getent passwd gbdmpc'
check "purge: no group" sh -c '! getent group gbdmpc'
for p in /etc/gbdmpc /var/lib/gbdmpc /usr/bin/gbdmpc /lib/systemd/system/gbdmpc.service /usr/share/gbdmpc \
	/usr/share/doc/gbdmpc /usr/share/man/man1/gbdmpc.1.gz \
	/etc/systemd/system/multi-user.target.wants/gbdmpc.service /etc/systemd/system/gbdmpc.service \
	/var/lib/systemd/deb-systemd-helper-enabled/gbdmpc.service.dsh-also \
	/var/lib/systemd/deb-systemd-helper-enabled/multi-user.target.wants/gbdmpc.service \
	/var/lib/systemd/deb-systemd-helper-masked/gbdmpc.service; do
	check "purge: $p gone" absent "$p"
done

echo "test-deb: $version checked in $((SECONDS - start)) s"
echo "test-deb: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
