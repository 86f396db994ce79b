#!/usr/bin/env bash
# Installs a capctl package with apt into a throwaway copy of this machine's root, with
# the Swift toolchain hidden, and checks that what was installed works on its own:
#   1. `apt-get install ./capctl_….deb` succeeds;
#   2. no Swift toolchain is left to find, and the installed binary needs nothing of one;
#   3. `capctl --version` gives the package's version; `list-devices` lists the test
#      pattern; a 1 s test-pattern recording makes a file ffprobe reads as 1 s of video;
#   4. `list-devices` loads no FFmpeg library and the recording loads them (LD_DEBUG);
#   5. every shared object the recording has mapped belongs to a package that the
#      package's Depends pull in (so that apt brings each one onto a fresh Debian 12);
#   6. the service: /usr/libexec/capctl/capctl-serve is installed and `capctl serve --help`
#      works; `capctl serve --video test-pattern --listen 127.0.0.1:0` answers GET /session
#      and exits 0 on SIGTERM; under the kernel's memory-deny-write-execute (what the unit's
#      MemoryDenyWriteExecute= asks for) it records over HTTP; the user capctl exists, in
#      video and audio; the unit is installed, not enabled, and systemd-analyze verify takes
#      it. The unit itself cannot run here: no systemd runs in the chroot, so its sandbox,
#      user and devices are not tried; a WHEP player (aiortc) plays a camera and a microphone;
#      with a test CA's certificate and a credential made as capctl, the unit's command serves
#      HTTPS over HTTP/2, refuses a request without the credential, records and reloads (SIGHUP);
#   7. with libavformat's file emptied, `list-devices` still works and `record` fails
#      with status 69 and one line naming the library and its package;
#   8. `dpkg --purge capctl` removes the options file and the access file, keeps
#      /var/lib/capctl/recordings while it holds a recording, and removes /var/lib/capctl
#      once it is empty.
# The copy is an overlay over / (changes go to a tmpfs) in a private mount namespace
# chrooted into; /opt/swift is covered by an empty folder. Nothing of it outlives the test.
#
#   Tests/Package/install.test.sh DEB     (as root; prints "ok" lines, exits 1 on a failure)
set -euo pipefail

deb=$(realpath "$1")
version=$(dpkg-deb -f "$deb" Version)

if [[ ${CAPCTL_PACKAGE_TEST_INNER:-} != 1 ]]; then
  [[ $(id -u) -eq 0 ]] || { echo "install.test: needs root (mounts an overlay and chroots)" >&2; exit 1; }
  exec env CAPCTL_PACKAGE_TEST_INNER=1 unshare --mount --propagation private "$0" "$@"
fi

failed=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; failed=1; }

base=$(mktemp -d)
mount -t tmpfs tmpfs "$base"
mkdir "$base"/{upper,work,root,empty}
root=$base/root
mount -t overlay overlay -o "lowerdir=/,upperdir=$base/upper,workdir=$base/work" "$root"
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
mount -t tmpfs tmpfs "$root/tmp"
if [[ -d $root/opt/swift ]]; then mount --bind "$base/empty" "$root/opt/swift"; fi
cp "$deb" "$root/tmp/"
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 bash -c "$1"; }

# 1. apt installs it (every dependency is installed here already, so nothing is downloaded).
if in_root "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/$(basename "$deb")" >"$base/apt.log" 2>&1; then
  ok "apt-get install ./$(basename "$deb")"
else
  cat "$base/apt.log"; bad "apt-get install ./$(basename "$deb")"; exit 1
fi

# 2. No toolchain.
if in_root 'command -v swift || ls /opt/swift/usr 2>/dev/null' >/dev/null; then bad "a Swift toolchain is still visible"; fi
libraries=$(in_root 'ldd /usr/bin/capctl')
if grep -qE 'not found|/opt/swift|libswift|Foundation' <<<"$libraries"; then
  echo "$libraries"; bad "the installed capctl needs what is not there"
else
  ok "ldd /usr/bin/capctl: $(wc -l <<<"$libraries") libraries, none of a Swift toolchain"
fi

# 3. It runs.
got=$(in_root 'capctl --version') || true
[[ $got == "$version" ]] && ok "capctl --version: $got" || bad "capctl --version gave '$got', the package is $version"
listed=$(in_root 'capctl list-devices') || true
if grep -q 'test-pattern' <<<"$listed"; then ok "capctl list-devices"; else bad "capctl list-devices lists no test-pattern: $listed"; fi
if in_root 'cd /tmp && capctl record --video test-pattern --max-duration 1 out.mp4' >"$base/record.log" 2>&1; then
  duration=$(in_root 'ffprobe -v error -select_streams v:0 -show_entries format=duration -of csv=p=0 /tmp/out.mp4')
  if awk -v d="$duration" 'BEGIN { exit !(d >= 0.9 && d <= 1.1) }'; then ok "1 s test-pattern recording: $duration s"; else bad "the recording lasts '$duration' s"; fi
else
  cat "$base/record.log"; bad "capctl record --video test-pattern --max-duration 1 out.mp4"
fi

# 4. FFmpeg is loaded by the recording only. (The loader's log is kept whole before it
# is searched: grep -q stopping early would break the pipe.)
probe_log=$(in_root 'LD_DEBUG=libs capctl list-devices 2>&1 >/dev/null')
record_log=$(in_root 'cd /tmp && rm -f out.mp4 && LD_DEBUG=libs capctl record --video test-pattern --max-duration 0.2 out.mp4 2>&1 >/dev/null')
if ! grep -q 'libc\.so' <<<"$probe_log"; then
  bad "LD_DEBUG=libs gave no loader log"
elif grep -q 'libav\|libsw' <<<"$probe_log"; then
  bad "capctl list-devices loaded FFmpeg's libraries"
else
  ok "capctl list-devices loads no FFmpeg library"
fi
if grep -q 'libavformat\.so' <<<"$record_log"; then ok "capctl record loads libavformat"; else bad "capctl record did not load libavformat"; fi

# 5. What a recording maps, Depends brings.
mapped=$(in_root 'cd /tmp && rm -f long.mp4 && { capctl record --video test-pattern --audio test-tone --max-duration 30 long.mp4 >/dev/null 2>&1 & pid=$!; }
  for _ in $(seq 100); do [[ -s long.mp4 ]] && break; sleep 0.1; done; sleep 0.5
  awk "\$6 ~ /\\.so/ { print \$6 }" /proc/$pid/maps | sort -u; kill -INT $pid; wait $pid')
closure=$(in_root 'apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances capctl' |
  grep -v '^ ' | sed 's/:.*//' | sort -u)
missing=()
count=0
while read -r file; do
  [[ -n $file ]] || continue
  count=$((count + 1))
  # Merged /usr: dpkg knows each file by the path its package ships, with or without /usr.
  owner=$(in_root "dpkg -S '$file' 2>/dev/null || dpkg -S '${file#/usr}' 2>/dev/null || dpkg -S '/usr$file' 2>/dev/null" | head -1 | sed 's/[:,].*//') || true
  if [[ -z $owner ]] || ! grep -qx "$owner" <<<"$closure"; then missing+=("$file (${owner:-no package})"); fi
done <<<"$mapped"
if ((count < 20)); then
  bad "the recording mapped only $count shared objects: $(tr '\n' ' ' <<<"$mapped")"
elif ((${#missing[@]})); then
  bad "mapped by a recording, but not brought by Depends: ${missing[*]}"
else
  ok "the $count shared objects a recording maps all come with Depends"
fi

# 6. The service.
server=/usr/libexec/capctl/capctl-serve
if in_root "[ -x $server ]"; then
  libraries=$(in_root "ldd $server")
  if grep -qE 'not found|/opt/swift|libswift|Foundation' <<<"$libraries"; then
    echo "$libraries"; bad "the installed capctl-serve needs what is not there"
  else
    ok "$server installed: $(wc -l <<<"$libraries") libraries, none of a Swift toolchain"
  fi
else
  bad "$server is not installed"
fi
help=$(in_root 'capctl serve --help 2>&1') && [[ $help == *--listen* && $help == *--token-file* ]] &&
  ok "capctl serve --help" || bad "capctl serve --help: $help"

# serve_script COMMAND DIR [record]: a script for the chroot that runs COMMAND, which
# executes (exec) a service listening on a free port of 127.0.0.1 and writing in DIR; asks
# GET /session (with "record", also records 1 s over HTTP); stops the service with SIGTERM
# and prints what happened, one "key value" a line.
serve_script() {
  cat <<EOF
set -u
cd /tmp
( $1 ) >/tmp/serve.out 2>/tmp/serve.err &
pid=\$!
port=
for _ in \$(seq 200); do
  port=\$(grep '"event":"service-started"' /tmp/serve.out | sed -n 's/.*"port":\([0-9]*\).*/\1/p')
  [ -n "\$port" ] && break
  kill -0 \$pid 2>/dev/null || break
  sleep 0.05
done
echo "exe \$(readlink /proc/\$pid/exe)"
echo "port \$port"
echo "session \$(curl -sS --max-time 5 -o /tmp/session.json -w '%{http_code}' http://127.0.0.1:\$port/session) \$(head -c 200 /tmp/session.json | tr -d '\n')"
if [ "${3:-}" = record ]; then
  echo "record \$(curl -sS --max-time 5 -o /tmp/record.json -w '%{http_code}' -H 'Content-Type: application/json' \
    -d '{"file": "clip.mp4", "maxDuration": "1"}' http://127.0.0.1:\$port/recordings) \$(cat /tmp/record.json)"
  for _ in \$(seq 300); do grep -q '"event":"finished"' /tmp/serve.out && break; sleep 0.05; done
  echo "duration \$(ffprobe -v error -show_entries format=duration -of csv=p=0 $2/clip.mp4 2>&1 | head -1)"
  echo "owner \$(stat -c %U $2/clip.mp4)"
fi
if [ "${3:-}" = whep ]; then
  echo "whep \$(${4:-} --url http://127.0.0.1:\$port --width 640 --height 480 2>&1 | tail -1)"
fi
kill -TERM \$pid
wait \$pid
echo "status \$?"
EOF
}
# field KEY TEXT: the value of the line "KEY value" in TEXT
field() { sed -n "s/^$1 //p" <<<"$2"; }

in_root 'mkdir /tmp/x'
served=$(in_root "$(serve_script 'exec capctl serve --video test-pattern --listen 127.0.0.1:0 --dir /tmp/x' /tmp/x)")
if [[ $(field exe "$served") == "$server" && $(field session "$served") == "200 {"* && $(field status "$served") == 0 ]]; then
  ok "capctl serve --listen 127.0.0.1:0 ran $server, answered GET /session on port $(field port "$served"), exited 0 on SIGTERM"
else
  echo "$served"; cat "$root/tmp/serve.err"; bad "capctl serve did not answer GET /session and exit 0 on SIGTERM"
fi
# prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN): from then on no mapping may become both
# writable and executable, in this process and what it executes. systemd's
# MemoryDenyWriteExecute= refuses the same with a seccomp filter, which the unit asks for.
mdwe="python3 -c 'import ctypes, os, sys; ctypes.CDLL(None).prctl(65, 1, 0, 0, 0) == 0 or sys.exit(\"no PR_SET_MDWE\"); os.execvp(sys.argv[1], sys.argv[1:])'"
served=$(in_root "$(serve_script "exec $mdwe capctl serve --video test-pattern --listen 127.0.0.1:0 --dir /tmp/x" /tmp/x record)")
duration=$(field duration "$served")
if [[ $(field session "$served") == "200 "* && $(field record "$served") == 20[01]" "* && $(field status "$served") == 0 ]] &&
  awk -v d="$duration" 'BEGIN { exit !(d >= 0.9 && d <= 1.1) }'; then
  ok "under memory-deny-write-execute: capctl serve recorded $duration s over HTTP, exited 0"
else
  echo "$served"; cat "$root/tmp/serve.err"; bad "capctl serve under memory-deny-write-execute"
fi
# WebRTC from the package: its GStreamer plugins come with its Depends. aiortc (the test
# virtualenv of this working copy, seen at the same path in the copy of /) plays the camera and
# the microphone over WHEP from the installed capctl-serve.
here=$(cd "$(dirname "$0")/../.." && pwd)
if [[ -x $here/.venv-test/bin/python ]]; then
  served=$(in_root "$(serve_script 'exec capctl serve --video test-pattern --audio test-tone --listen 127.0.0.1:0 --dir /tmp/x' /tmp/x whep \
    "$here/.venv-test/bin/python $here/Tests/Service/whep_aiortc.py")")
  # Its checks: the answer, video, its size, audio, sender reports of both streams at their
  # clock rates, the DELETE: at least 8, none failed.
  whep=$(field whep "$served")
  if [[ $whep =~ ^aiortc:\ ([0-9]+)\ passed,\ 0\ failed$ ]] && ((BASH_REMATCH[1] >= 8)) && [[ $(field status "$served") == 0 ]]; then
    ok "the installed capctl serve plays a camera and a microphone over WHEP (aiortc), exited 0"
  else
    echo "$served"; cat "$root/tmp/serve.err"; bad "the installed capctl serve over WHEP"
  fi
else
  bad "no $here/.venv-test (scripts/setup makes it): WHEP from the package not tried"
fi
# The unit's command as the unit runs it, as far as can be done without systemd: as the user
# capctl with its groups, in /var/lib/capctl, with the options file's options (the test
# pattern for video:0, a free port for 8080), into /var/lib/capctl/recordings.
unit_command='cd /var/lib/capctl && . /etc/default/capctl-serve &&
  exec setpriv --reuid=capctl --regid=capctl --init-groups /usr/libexec/capctl/capctl-serve serve \
    $(echo "$CAPCTL_SERVE_OPTIONS" | sed "s/video:0/test-pattern/; s/127.0.0.1:8080/127.0.0.1:0/")'
served=$(in_root "$(serve_script "$unit_command" /var/lib/capctl/recordings record)")
if [[ $(field record "$served") == 20[01]" "* && $(field owner "$served") == capctl && $(field status "$served") == 0 ]]; then
  ok "the unit's command as capctl with /etc/default/capctl-serve: recorded $(field duration "$served") s into /var/lib/capctl/recordings, exited 0"
else
  echo "$served"; cat "$root/tmp/serve.err"; bad "the unit's command as the user capctl"
fi

# HTTPS from the package, set up as /etc/default/capctl-serve says: a certificate of a test CA
# (openssl) in /etc/capctl/tls readable by the group capctl, a credential made as the user
# capctl in its access file; the unit's command with them answers over HTTP/2 with the
# credential and 401 without, records, reloads on SIGHUP (systemctl reload) and exits 0.
tls_setup='set -e
install -d -m 750 -g capctl /etc/capctl/tls && cd /etc/capctl/tls
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout /tmp/ca.key -out /tmp/ca.pem -days 1 -subj "/CN=test CA" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout privkey.pem -out /tmp/server.csr -subj /CN=127.0.0.1 2>/dev/null
printf "subjectAltName=IP:127.0.0.1\n" >/tmp/ext
openssl x509 -req -in /tmp/server.csr -CA /tmp/ca.pem -CAkey /tmp/ca.key -CAcreateserial -out fullchain.pem -days 1 -extfile /tmp/ext 2>/dev/null
chgrp capctl privkey.pem fullchain.pem && chmod 640 privkey.pem fullchain.pem
setpriv --reuid=capctl --regid=capctl --init-groups capctl serve --access-file /var/lib/capctl/access.json \
  --add-credential installer --role admin >/tmp/secret 2>/tmp/secret.err
echo "made $(stat -c "%U %a" /var/lib/capctl/access.json) $(wc -l </tmp/secret)"
cat /tmp/secret.err >&2'
made=$(in_root "$tls_setup" 2>&1) || true
# The unit's command with HTTPS, in a script of the copy (written here: no quoting to undo).
cat >"$root/tmp/tls.sh" <<'SCRIPT'
set -u
cd /var/lib/capctl && . /etc/default/capctl-serve
options=$(echo "$CAPCTL_SERVE_OPTIONS" | sed "s/video:0/test-pattern/; s/127.0.0.1:8080/127.0.0.1:0/")
setpriv --reuid=capctl --regid=capctl --init-groups /usr/libexec/capctl/capctl-serve serve $options \
  --access-file /var/lib/capctl/access.json --tls-cert /etc/capctl/tls/fullchain.pem --tls-key /etc/capctl/tls/privkey.pem \
  >/tmp/serve.out 2>/tmp/serve.err &
pid=$!
port=
for _ in $(seq 200); do
  port=$(grep '"event":"service-started"' /tmp/serve.out | sed -n 's/.*"port":\([0-9]*\).*/\1/p')
  [ -n "$port" ] && break; sleep 0.05
done
https() { curl -sS --max-time 10 --cacert /tmp/ca.pem -o /tmp/answer -w '%{http_code}/%{http_version}' "$@"; }
credential="Authorization: Bearer $(cat /tmp/secret)"
echo "with $(https -H "$credential" https://127.0.0.1:$port/session)"
echo "without $(https https://127.0.0.1:$port/session)"
echo "record $(https -H "$credential" -H 'Content-Type: application/json' -d '{"file": "tls.mp4", "maxDuration": "1"}' \
  https://127.0.0.1:$port/recordings)"
kill -HUP $pid
for _ in $(seq 300); do grep -q '"event":"finished"' /tmp/serve.out && grep -q service-reloaded /tmp/serve.out && break; sleep 0.05; done
echo "reloaded $(grep -c service-reloaded /tmp/serve.out)"
echo "duration $(ffprobe -v error -show_entries format=duration -of csv=p=0 /var/lib/capctl/recordings/tls.mp4 2>&1 | head -1)"
rm -f /var/lib/capctl/recordings/tls.mp4
kill -TERM $pid
wait $pid
echo "status $?"
SCRIPT
served=$(in_root "bash /tmp/tls.sh")
if [[ $(head -1 <<<"$made") == "made capctl 600 1" && $(field with "$served") == 200/2 && $(field without "$served") == 401/2 &&
      $(field record "$served") == 201/2 && $(field reloaded "$served") == 1 && $(field status "$served") == 0 ]]; then
  ok "HTTPS from the package: HTTP/2 with a credential made as capctl (401 without), recorded $(field duration "$served") s, reloaded on SIGHUP, exited 0"
else
  echo "$made"; echo "$served"; cat "$root/tmp/serve.err"; bad "HTTPS from the package"
fi

groups=$(in_root 'id -nG capctl 2>&1') || true
home=$(in_root 'getent passwd capctl | cut -d: -f6') || true
if [[ " $groups " == *" video "* && " $groups " == *" audio "* && $home == /var/lib/capctl ]]; then
  ok "user capctl, home $home, groups: $groups"
else
  bad "user capctl: groups '$groups', home '$home'"
fi

unit=/lib/systemd/system/capctl-serve.service
if ! in_root "[ -f $unit ]"; then
  bad "$unit is not installed"
else
  # systemctl works on the files alone in a chroot; no link in a .wants folder either.
  enabled=$(in_root 'systemctl is-enabled capctl-serve.service 2>&1; ls /etc/systemd/system/*.wants/capctl-serve.service 2>/dev/null') || true
  if [[ $enabled == disabled ]]; then ok "$unit installed, not enabled"; else bad "capctl-serve.service: is-enabled says: $enabled"; fi
  if in_root 'command -v systemd-analyze' >/dev/null; then
    # It warns of an unknown key or value and still exits 0: any message fails.
    if verified=$(in_root "systemd-analyze verify $unit 2>&1") && [[ -z $verified ]]; then
      ok "systemd-analyze verify $unit: no message"
    else
      bad "systemd-analyze verify $unit: $verified"
    fi
  else
    # No systemd here: at least every line must be a section, a comment or a key its section knows.
    unknown=$(in_root "cat $unit" | awk '/^\[/ { section = $0; next } /^(#|$)/ { next }
      { key = $0; sub(/=.*/, "", key)
        if (section key !~ /^\[Unit\](Description|Documentation|After)$|^\[Install\]WantedBy$|^\[Service\](Type|EnvironmentFile|ExecStart|User|Group|SupplementaryGroups|WorkingDirectory|UMask|KillSignal|TimeoutStopSec|Restart|RestartSec|RestartPreventExitStatus|StateDirectory|StateDirectoryMode|ReadWritePaths|Protect(System|Home|KernelTunables|KernelModules|KernelLogs|ControlGroups|Clock|Hostname)|PrivateTmp|NoNewPrivileges|CapabilityBoundingSet|RestrictSUIDSGID|RestrictRealtime|RemoveIPC|RestrictAddressFamilies|RestrictNamespaces|LockPersonality|MemoryDenyWriteExecute|SystemCallArchitectures|DevicePolicy|DeviceAllow)$/) print }')
    [[ -z $unknown ]] && ok "$unit: every key known (no systemd-analyze here)" || bad "$unit: unknown lines: $unknown"
  fi
fi

# 7. Without libavformat: probes work, media commands say what is missing.
# (The overlay holds this machine's files, so the library is where the loader finds it here.)
avformat=$(readlink -f "$(ldconfig -p | awk '$1 ~ /^libavformat\.so\.[0-9]+$/ { print $NF; exit }')")
mount --bind /dev/null "$root$avformat"
listed=$(in_root 'capctl list-devices') || true
if grep -q 'test-pattern' <<<"$listed"; then ok "without libavformat: capctl list-devices works"; else bad "without libavformat, list-devices fails"; fi
status=0
message=$(in_root 'cd /tmp && capctl record --video test-pattern --max-duration 1 gone.mp4 2>&1 >/dev/null') || status=$?
if ((status == 69)) && [[ $(wc -l <<<"$message") -eq 1 && $message == *libavformat.so.*libavformat[0-9]* ]]; then
  ok "without libavformat: record exits 69: $message"
else
  bad "without libavformat: record exited $status: $message"
fi

umount "$root$avformat"

# 8. Purge: dpkg removes the conffile; the postrm empties /var/lib/capctl but for the
# recording made above (the user's, not the package's), then, with it gone, removes it.
if in_root 'DEBIAN_FRONTEND=noninteractive dpkg --purge capctl' >"$base/purge.log" 2>&1; then
  left=$(in_root 'ls -d /etc/default/capctl-serve /usr/libexec/capctl $(find /var/lib/capctl) 2>/dev/null | tr "\n" " "') || true
  # Again, with nothing of the user's left: installed anew, the recording removed, purged.
  in_root "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /tmp/$(basename "$deb") && rm /var/lib/capctl/recordings/clip.mp4 &&
    dpkg --purge capctl" >>"$base/purge.log" 2>&1 || true
  gone=$(in_root 'ls -d /var/lib/capctl 2>/dev/null') || true
  if [[ $left == "/var/lib/capctl /var/lib/capctl/recordings /var/lib/capctl/recordings/clip.mp4 " && -z $gone ]]; then
    ok "dpkg --purge capctl: the options file gone, a recording kept; without it, /var/lib/capctl gone"
  else
    bad "dpkg --purge capctl left: $left; once the recording was removed: ${gone:-nothing}"
  fi
else
  cat "$base/purge.log"; bad "dpkg --purge capctl"
fi

if ((failed)); then echo "install.test: FAILED"; exit 1; fi
echo "install.test: all passed"
