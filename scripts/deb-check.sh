#!/usr/bin/env bash
# Builds the Debian package with cargo-deb, from [package.metadata.deb] in Cargo.toml,
# and checks what it holds: the binary (which runs), the unit (the repository's), the
# system user's sysusers file, the configuration file as a conffile, the README the
# unit's Documentation= names, and maintainer scripts that create the user and the data
# directory but never enable or start the service.
#
#   bash scripts/deb-check.sh               # builds the release binary first
#   bash scripts/deb-check.sh --no-build    # CI: packages target/release/engaged as it is
#
# CI runs it right after `cargo bench --no-run`, which builds target/release/engaged (with
# the dev-dependencies' features, which change nothing the package is checked for); a
# separate `cargo build --release` would compile every dependency again, about four
# minutes on 2 cores. cargo-deb is installed (pinned, into ~/.cargo/bin) when missing:
# about a minute and a half on 2 cores, once per machine.
set -euo pipefail
cd "$(dirname "$0")/.."

build=yes
case "${1:-}" in
  "") ;;
  --no-build) build=no ;;
  *) echo "usage: $0 [--no-build]" >&2; exit 2 ;;
esac

cargo_deb_version=3.8.0
if ! cargo deb --version 2>/dev/null | grep -qx "cargo-deb $cargo_deb_version"; then
  echo "installing cargo-deb $cargo_deb_version"
  started=$SECONDS
  cargo install cargo-deb --version "$cargo_deb_version" --locked --quiet
  echo "installed cargo-deb in $((SECONDS - started)) s"
fi

if [ "$build" = yes ]; then
  cargo build --release --locked --bin engaged
elif [ ! -x target/release/engaged ]; then
  echo "deb-check: no target/release/engaged to package (run cargo bench --no-run first)" >&2
  exit 1
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
started=$SECONDS
cargo deb --no-build --locked --fast --output "$out/" >/dev/null
echo "cargo deb: $((SECONDS - started)) s"
deb=$(ls "$out"/engaged_*.deb)
version=$(cargo metadata --no-deps --format-version 1 |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["packages"][0]["version"])')

fail() {
  echo "deb-check: $*" >&2
  exit 1
}

field() { dpkg-deb --field "$deb" "$1"; }
[ "$(field Package)" = engaged ] || fail "Package is $(field Package)"
[ "$(field Version)" = "$version-1" ] || fail "Version is $(field Version), not $version-1"
depends=$(field Depends)
for dep in libc6 systemd; do
  grep -q "$dep" <<<"$depends" || fail "Depends ($depends) lacks $dep"
done

# The file list: path and mode of everything the package installs.
listing=$(dpkg-deb --contents "$deb" | awk '{print $1, $6}')
expect_file() { # mode path
  grep -qx -- "$1 ./$2" <<<"$listing" || fail "no $2 with mode $1 in:\n$listing"
}
expect_file -rwxr-xr-x usr/bin/engaged
expect_file -rw-r--r-- etc/engaged/engaged.toml
expect_file -rw-r--r-- usr/share/doc/engaged/README.md
expect_file -rw-r--r-- usr/share/doc/engaged/docs/operations.md
expect_file -rw-r--r-- usr/lib/sysusers.d/engaged.conf
unit_path=$(grep -oE '\./(usr/)?lib/systemd/system/engaged\.service' <<<"$listing") ||
  fail "no systemd unit in:\n$listing"

control=$out/control
data=$out/data
dpkg-deb --control "$deb" "$control"
dpkg-deb --extract "$deb" "$data"
grep -qx /etc/engaged/engaged.toml "$control/conffiles" || fail "engaged.toml is not a conffile"
cmp -s "$data/$unit_path" systemd/engaged.service || fail "the packaged unit differs from systemd/engaged.service"
cmp -s "$data/usr/lib/sysusers.d/engaged.conf" systemd/engaged.sysusers || fail "the sysusers file differs"
cmp -s "$data/etc/engaged/engaged.toml" config/engaged.toml || fail "the configuration differs"
grep -q 'file:///usr/share/doc/engaged/docs/operations.md' "$data/$unit_path" ||
  fail "the unit's Documentation= does not name the packaged operations manual"
"$data/usr/bin/engaged" --version | grep -qx "engaged $version" || fail "the packaged binary does not run"

# Installing creates the user and the data directory, and starts nothing.
postinst=$control/postinst
[ -x "$postinst" ] || fail "no postinst"
grep -q 'systemd-sysusers' "$postinst" || fail "postinst does not create the user"
grep -q 'install -d -m 0700 -o engaged -g engaged /var/lib/engaged' "$postinst" ||
  fail "postinst does not create the data directory"
# (Comments and the message printed at the end may name `systemctl enable`.)
if grep -vE '^\s*(#|echo )' "$postinst" |
  grep -nE 'systemctl +(--[a-z]+ +)*(start|enable|restart)|deb-systemd-invoke +(start|restart)'; then
  fail "postinst may start or enable the service"
fi
grep -q '^#DEBHELPER#' "$postinst" && fail "postinst kept the DEBHELPER token"
grep -q 'try-restart engaged.service' "$postinst" || fail "an upgrade does not restart a running service"
for script in prerm postrm; do
  [ -x "$control/$script" ] || fail "no $script"
done
grep -q 'stop engaged.service' "$control/prerm" || fail "removing does not stop the service"

echo "deb-check: $(basename "$deb") holds what it should:"
dpkg-deb --contents "$deb" | awk '{print "  " $1, $6}'
