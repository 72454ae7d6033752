# Shared by the guest scripts (conformance/guests/rootfs-guest and
# conformance/vm/vm-guest): the download cache, busybox from Debian's
# busybox-static package, tokens, and bootstrapping a fresh daemon over the
# wire the way a harness would. Source it; it defines functions only.

# Downloads and images are cached outside the repository so reruns are fast.
AGENTD_CI_CACHE=${AGENTD_CI_CACHE:-/var/cache/agentd-ci}

die() {
  echo "${0##*/}: $*" >&2
  exit 1
}

note() {
  echo "${0##*/}: $*" >&2
}

# apt-get download as root into the current directory, without the _apt
# sandbox warning (the target directory is not readable by _apt).
apt_download() {
  apt-get -q -o APT::Sandbox::User=root download "$@" >&2
}

# Prints the path of a static busybox binary extracted from Debian's
# busybox-static package (cached by package version). Nothing is taken from
# the build machine's own installation.
busybox_static() {
  local debs="$AGENTD_CI_CACHE/debs" version deb dir
  mkdir -p "$debs"
  # The version Debian ships here: the installed package's (fast), else
  # apt's candidate. Only the .deb's contents are used.
  version=$(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null || true)
  if [ -z "$version" ]; then
    version=$(apt-cache policy busybox-static 2>/dev/null | awk '/Candidate:/ {print $2}')
  fi
  if [ -n "$version" ] && [ "$version" != "(none)" ]; then
    deb=$(ls "$debs"/busybox-static_"${version//:/%3a}"_*.deb 2>/dev/null | head -n1 || true)
    if [ -z "$deb" ]; then
      (cd "$debs" && apt_download "busybox-static=$version") || die "cannot download busybox-static"
      deb=$(ls "$debs"/busybox-static_"${version//:/%3a}"_*.deb | head -n1)
    fi
  else
    # No package lists: use whatever version was cached before.
    deb=$(ls -t "$debs"/busybox-static_*.deb 2>/dev/null | head -n1 || true)
    [ -n "$deb" ] || die "busybox-static is unknown to apt and not cached in $debs"
  fi
  dir="$AGENTD_CI_CACHE/busybox/$(basename "$deb" .deb)"
  if [ ! -x "$dir/busybox" ]; then
    local tmp
    tmp=$(mktemp -d)
    dpkg-deb -x "$deb" "$tmp"
    mkdir -p "$dir"
    install -m 0755 "$tmp/bin/busybox" "$dir/busybox.new"
    mv "$dir/busybox.new" "$dir/busybox"
    rm -rf "$tmp"
  fi
  echo "$dir/busybox"
}

# Installs busybox into ROOT/bin with one symlink per applet (made by perl,
# which Debian always has, in one process rather than 270 forks of ln).
install_busybox() {
  local busybox=$1 root=$2
  mkdir -p "$root/bin"
  install -m 0755 "$busybox" "$root/bin/busybox"
  "$busybox" --list | BIN="$root/bin" perl -ne 'chomp;
    next if $_ eq "busybox";
    unlink "$ENV{BIN}/$_";
    symlink("busybox", "$ENV{BIN}/$_") or die "symlink $_: $!\n";'
}

# The account files every guest gets when its image has none: root and
# nobody, as the exec checks need.
write_accounts() {
  local root=$1
  mkdir -p "$root/etc"
  cat >"$root/etc/passwd" <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
  cat >"$root/etc/group" <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP
  chmod 0644 "$root/etc/passwd" "$root/etc/group"
}

# Prints --init when the agentd binary has its PID 1 mode (agentd --init:
# reap every orphan, forward signals), else nothing, so the guests run the
# daemon as PID 1 either way. AGENTD_GUEST_INIT=no turns the mode off.
pid1_flag() {
  [ "${AGENTD_GUEST_INIT:-auto}" != no ] || return 0
  if "$1" --help 2>&1 | grep -q '^ *--init '; then
    echo --init
  fi
}

new_token() {
  od -An -N24 -tx1 /dev/urandom | tr -d ' \n'
}

# wait_for_health CURL_TARGET_ARGS... : polls GET /v1/health until it answers
# 200 or $deadline (seconds since the epoch) passes. $alive_check, when set,
# is a command that fails once the guest has died.
wait_for_health() {
  local url=$1
  shift
  while :; do
    if curl -fsS --max-time 2 "$@" "$url/v1/health" >/dev/null 2>&1; then
      return 0
    fi
    if [ -n "${alive_check:-}" ] && ! eval "$alive_check"; then
      return 1
    fi
    [ "$(date +%s)" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

# bootstrap URL TOKEN CURL_ARGS...: sets the token through POST /v1/bootstrap,
# first writer wins, exactly as a harness does on a fresh guest.
bootstrap() {
  local url=$1 token=$2 answer
  shift 2
  answer=$(curl -sS --max-time 10 "$@" -X POST -H 'Content-Type: application/json' \
    --data "{\"token\":\"$token\"}" "$url/v1/bootstrap") || return 1
  case $answer in
    *'"replayed":false'*) return 0 ;;
    *) note "bootstrap answered: $answer"; return 1 ;;
  esac
}
