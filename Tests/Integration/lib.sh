# Tests/Integration/lib.sh: helpers for the integration tests. Source it first:
#
#   #!/usr/bin/env bash
#   source "$(dirname "$0")/lib.sh"
#
# It turns on `set -eEuo pipefail` and reports the failing line of any command that
# stops the test. A test passes when it exits 0 and fails otherwise; it never skips.
# Environment (from run-all): CAPCTL, REPO, RESULTS; the cwd and TMPDIR are a fresh
# temporary folder of the test's own.
set -eEuo pipefail
ERR_TRAP='echo "FAIL: ${BASH_SOURCE[0]##*/}:$LINENO: \`$BASH_COMMAND\` exited with status $?" >&2'
trap "$ERR_TRAP" ERR

# --- reporting ------------------------------------------------------------------------

# note MESSAGE...: a line in the test's log
note() { echo "--- [${SECONDS}s] $*" >&2; }

# fail MESSAGE...: fail the test now
fail() {
  trap - ERR
  echo "FAIL: $*" >&2
  exit 1
}

# check NAME COMMAND...: run one case of a test (a function, usually) in a subshell, as the
# test itself runs (set -e, the failing line reported), and go on when it fails: a test of
# several independent cases reports each failing one. checks_done, last, fails the test if
# any case failed. A case's variables and feeders do not outlive it.
CHECKS_FAILED=()
check() {
  local name=$1 status
  shift
  note "$name"
  trap - ERR
  set +e
  (
    set -e
    trap "$ERR_TRAP" ERR
    "$@"
  )
  status=$?
  set -e
  trap "$ERR_TRAP" ERR
  ((status == 0)) || CHECKS_FAILED+=("$name")
}

# checks_done: fail the test if a case run by check failed, keeping the test's files (what
# it recorded, its logs) in $RESULTS/artifacts/TEST for a look afterwards
checks_done() {
  ((${#CHECKS_FAILED[@]} == 0)) && return 0
  local keep=${RESULTS:+$RESULTS/artifacts/$(basename "$0" .test.sh)}
  if [[ -n $keep ]] && mkdir -p "$keep"; then
    find . -maxdepth 1 -type f -size -20M -exec cp {} "$keep/" \; || true
    note "the test's files are in $keep"
  fi
  fail "${#CHECKS_FAILED[@]} case(s) failed: $(printf '%s; ' "${CHECKS_FAILED[@]}")"
}

# need COMMAND...: fail unless each command is on PATH
need() {
  local c
  for c in "$@"; do command -v "$c" >/dev/null || fail "command not found: $c"; done
}

# --- assertions -------------------------------------------------------------------------

# assert_eq EXPECTED ACTUAL [MESSAGE]
assert_eq() {
  [[ $1 == "$2" ]] || fail "${3:-values differ}: expected '$1', got '$2'"
}

# assert_ne UNEXPECTED ACTUAL [MESSAGE]
assert_ne() {
  [[ $1 != "$2" ]] || fail "${3:-values equal}: did not expect '$2'"
}

# assert_contains HAYSTACK NEEDLE [MESSAGE]: NEEDLE is a fixed string
assert_contains() {
  [[ $1 == *"$2"* ]] || fail "${3:-text not found}: '$2' not in: $1"
}

# assert_match TEXT REGEX [MESSAGE]: bash extended regular expression
assert_match() {
  [[ $1 =~ $2 ]] || fail "${3:-no match}: /$2/ does not match: $1"
}

# run COMMAND...: run it, whatever its exit status, and record
#   LAST_STATUS, LAST_STDOUT, LAST_STDERR (trailing newlines removed)
# The full output is also kept in the files ./last.stdout and ./last.stderr.
run() {
  LAST_STATUS=0
  "$@" >last.stdout 2>last.stderr || LAST_STATUS=$?
  LAST_STDOUT=$(cat last.stdout)
  LAST_STDERR=$(cat last.stderr)
}

# show_last: print the last run's command output into the log
show_last() {
  echo "--- exit status: $LAST_STATUS" >&2
  echo "--- stdout:" >&2
  cat last.stdout >&2
  echo "--- stderr:" >&2
  cat last.stderr >&2
}

# assert_exit CODE COMMAND...: run the command (see run) and check its exit status
assert_exit() {
  local want=$1
  shift
  run "$@"
  if [[ $LAST_STATUS != "$want" ]]; then
    show_last
    fail "expected exit status $want, got $LAST_STATUS from: $*"
  fi
}

# assert_ok COMMAND...: same as assert_exit 0 COMMAND...
assert_ok() { assert_exit 0 "$@"; }

# assert_empty_stdout: the last run printed nothing on stdout
assert_empty_stdout() {
  [[ ! -s last.stdout ]] || { show_last; fail "expected empty stdout"; }
}

# assert_empty_stderr: the last run printed nothing on stderr
assert_empty_stderr() {
  [[ ! -s last.stderr ]] || { show_last; fail "expected empty stderr"; }
}

# assert_stdout_contains TEXT / assert_stderr_contains TEXT: in the last run's output
assert_stdout_contains() {
  grep -qF -- "$1" last.stdout || { show_last; fail "stdout lacks '$1'"; }
}
assert_stderr_contains() {
  grep -qF -- "$1" last.stderr || { show_last; fail "stderr lacks '$1'"; }
}

# assert_one_line_stderr: exactly one line on stderr (the error convention)
assert_one_line_stderr() {
  local n
  n=$(wc -l <last.stderr)
  [[ $n == 1 ]] || { show_last; fail "expected one line on stderr, got $n"; }
}

# assert_file FILE: exists and is not empty
assert_file() {
  [[ -s $1 ]] || fail "expected a non-empty file: $1"
}

# assert_no_file FILE: does not exist
assert_no_file() {
  [[ ! -e $1 ]] || fail "expected no file: $1"
}

# wait_until SECONDS COMMAND...: retry the command every 0.2 s until it succeeds;
# fails the test after SECONDS
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || fail "timed out after waiting for: $*"
    sleep 0.2
  done
}

# --- devices ----------------------------------------------------------------------------

# v4l_node NAME: print /dev/videoN (or /dev/radioN, ...) of the V4L2 node whose sysfs
# name is NAME; fails the test if there is none. vivid's names: vivid-000-vid-cap,
# vivid-000-vid-out, vivid-000-meta-cap, vivid-000-meta-out, ...
v4l_node() {
  local f
  for f in /sys/class/video4linux/*/name; do
    [[ -r $f ]] || continue
    if [[ $(<"$f") == "$1" ]]; then
      f=${f%/name}
      echo "/dev/${f##*/}"
      return 0
    fi
  done
  fail "no V4L2 node named '$1' (have: $(cat /sys/class/video4linux/*/name 2>/dev/null | tr '\n' ' '))"
}

# vivid_node [KIND]: vivid's first instance; KIND vid-cap (default), vid-out,
# meta-cap, meta-out, vbi-cap, vbi-out, touch-cap, ...
vivid_node() { v4l_node "vivid-000-${1:-vid-cap}"; }

# vivid_capture_node: vivid's video capture node (/dev/videoN)
vivid_capture_node() { vivid_node vid-cap; }

# alsa_card ID: print the ALSA card index whose id is ID (Loopback, Dummy); fails if none
alsa_card() {
  local f
  for f in /sys/class/sound/card*/id; do
    [[ -r $f ]] || continue
    if [[ $(<"$f") == "$1" ]]; then
      f=${f%/id}
      echo "${f##*/card}"
      return 0
    fi
  done
  fail "no ALSA card with id '$1' (have: $(cat /sys/class/sound/card*/id 2>/dev/null | tr '\n' ' '))"
}

# --- media --------------------------------------------------------------------------------

# pcm_peak FILE [SKIP_BYTES]: largest absolute sample value of S16_LE audio in FILE,
# after SKIP_BYTES (default 44: a canonical WAV header); 0 means silence
pcm_peak() {
  od -An -v -td2 -w2 -j "${2:-44}" "$1" |
    awk 'BEGIN { m = 0 } { v = $1 < 0 ? -$1 : $1; if (v > m) m = v } END { print m }'
}

# ffprobe_value FILE STREAM ENTRY: one stream field, e.g. ffprobe_value out.mp4 v:0 codec_name
ffprobe_value() {
  ffprobe -v error -select_streams "$2" -show_entries "stream=$3" -of default=noprint_wrappers=1:nokey=1 "$1"
}

# ffprobe_format FILE ENTRY: one container field, e.g. ffprobe_format out.mp4 duration
ffprobe_format() {
  ffprobe -v error -show_entries "format=$2" -of default=noprint_wrappers=1:nokey=1 "$1"
}

# frame_count FILE [STREAM]: decoded frames in a stream (default v:0)
frame_count() {
  ffprobe -v error -count_frames -select_streams "${2:-v:0}" -show_entries stream=nb_read_frames \
    -of default=noprint_wrappers=1:nokey=1 "$1"
}

# --- recordings -----------------------------------------------------------------------------

# event_field FILE EVENT FIELD: FIELD of the last EVENT object in an NDJSON FILE (record's
# --progress json output), printed as JSON (strings quoted, null when absent); fails if no
# such event
event_field() {
  python3 - "$@" <<'PY' || fail "no '$2' event in $1: $(tail -3 "$1")"
import json, sys
path, name, field = sys.argv[1:4]
events = [json.loads(l) for l in open(path) if l.strip().startswith("{")]
matching = [e for e in events if e.get("event") == name]
if not matching:
    sys.exit(1)
print(json.dumps(matching[-1].get(field)))
PY
}

# wait_record_event FILE EVENT [SECONDS] [PYTHON_CONDITION]: until FILE has an EVENT whose fields
# (a dict e) satisfy the condition (default True)
wait_record_event() {
  local deadline=$((SECONDS + ${3:-30}))
  until python3 -c 'import json,sys
for l in open(sys.argv[1]):
    if not l.strip().startswith("{"): continue
    e = json.loads(l)
    if e.get("event") == sys.argv[2] and eval(sys.argv[3]): sys.exit(0)
sys.exit(1)' "$1" "$2" "${4:-True}" 2>/dev/null; do
    if ((SECONDS >= deadline)); then
      echo "--- $1:" >&2
      tail -5 "$1" >&2
      fail "no '$2' event matching ${4:-True} within ${3:-30}s"
    fi
    sleep 0.2
  done
}

# packet_times FILE [STREAM]: presentation times of a stream's packets, one a line, sorted
packet_times() {
  ffprobe -v error -select_streams "${2:-v:0}" -show_entries packet=pts_time -of csv=p=0 "$1" | sort -g
}

# shown_times FILE [STREAM]: the times frames are shown at, decoded, after the file's edit
# lists (a regular MP4 keeps a pause's gap in its media and edits it out), sorted
shown_times() {
  ffprobe -v error -select_streams "${2:-v:0}" -show_entries frame=best_effort_timestamp_time -of csv=p=0 "$1" | sort -g
}

# largest_gap FILE [STREAM]: the longest time between consecutive frames as shown (seconds)
largest_gap() {
  shown_times "$1" "${2:-v:0}" | awk 'NR > 1 && $1 - p > m { m = $1 - p } { p = $1 } END { printf "%.6f\n", m }'
}

# stream_duration FILE STREAM: a track's duration as `capctl info --json` reports it
stream_duration() {
  "$CAPCTL" info --json "$1" | python3 -c 'import json,sys
d = json.load(sys.stdin)
t = [t for t in d["tracks"] if t["type"] == sys.argv[1]][0]
print(t["duration"])' "$2"
}

# within A B TOLERANCE: |A - B| <= TOLERANCE (decimal numbers)
within() {
  awk -v a="$1" -v b="$2" -v t="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= t + 1e-9) }'
}

# --- loopback cameras (v4l2loopback) ----------------------------------------------------------
# scripts/vm-integration loads v4l2loopback with four nodes, named loopback-mjpeg,
# loopback-h264, loopback-h264-split and loopback-yuyv (/dev/video10 to /dev/video13).
# With exclusive_caps a node offers video capture only once a writer has written to
# it; start_feeder starts that writer.

# loopback_node KIND: the loopback node for a feeder KIND (mjpeg, h264, h264-split, yuyv)
loopback_node() { v4l_node "loopback-$1"; }

# The feeders' pictures: testsrc2 (moving, with a frame counter) at FEED_SIZE and FEED_FPS,
# H.264 with an IDR picture every FEED_GOP frames and no B-frames. Defaults sustained in
# real time by the emulated guest with a recording running beside them.
FEED_SIZE=${FEED_SIZE:-320x240}
FEED_FPS=${FEED_FPS:-15}
FEED_GOP=${FEED_GOP:-15}
declare -A FEEDERS=() FEEDER_GOP=()

# start_feeder KIND...: start a program that writes a camera's frames into KIND's loopback
# node, in the background, at FEED_FPS in real time; return once each node offers video
# capture in its feeder's format (ffmpeg takes seconds to start under emulation: several
# feeders start side by side). KIND:
#   mjpeg       ffmpeg: MJPEG (4:2:2 JPEGs, one a buffer)
#   h264        ffmpeg, libx264: H.264 Annex B, one access unit a buffer, the SPS and PPS
#               in the IDR picture's buffer (in-band, as ffmpeg's v4l2 output writes packets)
#   h264-split  h264_feeder.py: the same stream (from ffmpeg through a pipe), but the SPS
#               and PPS in a buffer of their own (one write(2)), the IDR picture in the next
#   yuyv        ffmpeg: raw YUYV 4:2:2
# ffmpeg's progress (frame=N, one block every 0.2 s) goes to feeder-KIND.progress, its
# messages to feeder-KIND.log, in the cwd. KIND@N (h264@45): an IDR picture every N frames
# instead of every FEED_GOP. Feeders are stopped when the test exits (a test that sets its
# own EXIT trap calls stop_feeders there) or by stop_feeder KIND; a node whose feeder has
# stopped takes another.
start_feeder() {
  local kind
  for kind in "$@"; do
    if [[ $kind == *@* ]]; then
      FEED_GOP=${kind#*@} launch_feeder "${kind%@*}"
    else
      launch_feeder "$kind"
    fi
  done
  trap stop_feeders EXIT
  for kind in "$@"; do wait_feeder "${kind%@*}"; done
}

# the fourcc each feeder writes
declare -A FEEDER_FOURCC=([mjpeg]=MJPG [h264]=H264 [h264-split]=H264 [yuyv]=YUYV)

launch_feeder() {
  local kind=$1 node width height
  [[ -n ${FEEDER_FOURCC[$kind]:-} ]] || fail "start_feeder: unknown kind '$kind' (mjpeg, h264, h264-split, yuyv)"
  [[ -z ${FEEDERS[$kind]:-} ]] || fail "start_feeder $kind: already running"
  node=$(loopback_node "$kind")
  case $(loopback_caps "$node") in
    output) ;;
    none) loopback_rearm "$node" ;;
    *) fail "start_feeder $kind: $node already has a writer" ;;
  esac
  width=${FEED_SIZE%x*}
  height=${FEED_SIZE#*x}
  local source=(-f lavfi -i "testsrc2=size=$FEED_SIZE:rate=$FEED_FPS")
  local x264=(-c:v libx264 -preset ultrafast -tune zerolatency -g "$FEED_GOP" -bf 0 -pix_fmt yuv420p)
  local ffmpeg=(ffmpeg -nostdin -hide_banner -loglevel warning -stats_period 0.2 -progress "feeder-$kind.progress" -re)
  : >"feeder-$kind.progress"
  : >"feeder-$kind.log"
  case $kind in
    mjpeg) exec "${ffmpeg[@]}" "${source[@]}" -c:v mjpeg -q:v 5 -pix_fmt yuvj422p -f v4l2 "$node" ;;
    h264) exec "${ffmpeg[@]}" "${source[@]}" "${x264[@]}" -f v4l2 "$node" ;;
    h264-split)
      # ffmpeg writes the stream into a pipe (a named one: the guest has no /dev/fd for
      # bash's process substitution), access unit by access unit, in real time
      rm -f "feeder-$kind.fifo"
      mkfifo "feeder-$kind.fifo"
      "${ffmpeg[@]}" "${source[@]}" "${x264[@]}" -flush_packets 1 -f h264 - >"feeder-$kind.fifo" &
      exec python3 "$(dirname "${BASH_SOURCE[0]}")/h264_feeder.py" "$node" "$width" "$height" "$FEED_FPS" "feeder-$kind.fifo"
      ;;
    yuyv) exec "${ffmpeg[@]}" "${source[@]}" -pix_fmt yuyv422 -f v4l2 "$node" ;;
  esac </dev/null >>"feeder-$kind.log" 2>&1 &
  FEEDERS[$kind]=$!
  FEEDER_GOP[$kind]=
  [[ $kind != h264* ]] || FEEDER_GOP[$kind]=$FEED_GOP
}

wait_feeder() {
  local kind=$1 node fourcc=${FEEDER_FOURCC[$1]} deadline=$((SECONDS + 60)) info
  node=$(loopback_node "$kind")
  while :; do
    kill -0 "${FEEDERS[$kind]}" 2>/dev/null || fail "the $kind feeder on $node stopped: $(tail -5 "feeder-$kind.log")"
    info=$(v4l2-ctl -d "$node" -D --get-fmt-video 2>&1 || true)
    if [[ $(loopback_caps "$node" "$info") == capture && $info == *"Pixel Format      : '$fourcc'"* ]]; then
      break
    fi
    ((SECONDS < deadline)) || fail "the $kind feeder did not make $node a $fourcc capture device within 60 s: $info $(tail -5 "feeder-$kind.log")"
    sleep 0.2
  done
  note "$kind feeder (pid ${FEEDERS[$kind]}) writes $fourcc $FEED_SIZE at $FEED_FPS fps into $node${FEEDER_GOP[$kind]:+, an IDR every ${FEEDER_GOP[$kind]} frames}"
}

# feeder_frames KIND: frames a feeder's ffmpeg has made so far (its last progress report)
feeder_frames() {
  local n
  n=$(sed -n 's/^frame=//p' "feeder-$1.progress" | tail -n 1)
  echo "${n:-0}"
}

# loopback_caps NODE [V4L2_CTL_OUTPUT]: which of video capture and video output the node
# offers now: capture, output, both or none (from `v4l2-ctl -D`, or the output given)
loopback_caps() {
  local info=${2:-} caps
  [[ -n $info ]] || info=$(v4l2-ctl -d "$1" -D 2>&1 || true)
  [[ $info == *"Device Caps"* ]] || { echo none; return 0; }
  caps=${info#*Device Caps}
  caps=${caps%%$'\n'[^[:space:]]*}
  if [[ $caps == *"Video Capture"* && $caps == *"Video Output"* ]]; then echo both
  elif [[ $caps == *"Video Capture"* ]]; then echo capture
  elif [[ $caps == *"Video Output"* ]]; then echo output
  else echo none
  fi
}

# loopback_rearm NODE: make a node whose last writer used write(2) offer video output again.
# v4l2loopback 0.12 takes an opener for a writer only when it starts streaming
# (VIDIOC_STREAMON on the output type), and offers output again only when such a writer
# closes: after ffmpeg's v4l2 output (write(2) alone) has closed the node, it offers
# neither capture nor output, and the next writer's VIDIOC_G_FMT fails with EINVAL.
# A VIDIOC_STREAMON on the output type marks the opener a writer, even though it then
# fails (no format yet), and closing it brings the output side back.
loopback_rearm() {
  python3 -c 'import fcntl, os, struct, sys
fd = os.open(sys.argv[1], os.O_RDWR)
try:
    fcntl.ioctl(fd, 0x40045612, struct.pack("<I", 2))  # VIDIOC_STREAMON, V4L2_BUF_TYPE_VIDEO_OUTPUT
except OSError:
    pass
os.close(fd)' "$1" || fail "cannot open $1 to re-arm it"
  [[ $(loopback_caps "$1") == output ]] || fail "$1 does not offer video output after re-arming: $(v4l2-ctl -d "$1" -D 2>&1)"
}

# stop_feeder KIND: stop KIND's feeder (to spare the guest's CPU for what follows)
stop_feeder() {
  [[ -n ${FEEDERS[$1]:-} ]] || return 0
  kill "${FEEDERS[$1]}" 2>/dev/null || true
  wait "${FEEDERS[$1]}" 2>/dev/null || true
  unset "FEEDERS[$1]"
}

# stop_feeders: stop every feeder still running (the EXIT trap start_feeder sets)
stop_feeders() {
  local kind
  for kind in "${!FEEDERS[@]}"; do
    kill "${FEEDERS[$kind]}" 2>/dev/null || true
  done
}

# --- checking recordings of compressed cameras --------------------------------------------------

# probe_video FILE...: read each file's first video track with one ffmpeg run, which copies
# its packets (all of them, -copyinkf) to a framecrc listing and decodes it, each file on
# its own. For each FILE (FILE's name the key) sets
#   PROBE_CODEC[FILE], PROBE_SIZE[FILE] (WxH)      the stream
#   PROBE_PACKETS[FILE], PROBE_KEYFRAMES[FILE]     packets in the file, those flagged key
#   PROBE_FIRST_KEY[FILE]                          1 when the first packet is flagged key
#   PROBE_SPAN[FILE]                               seconds from the first frame's time to the
#                                                  end of the last one (its duration, or the
#                                                  mean frame interval when it has none)
#   PROBE_DECODED[FILE]                            frames the decoder made from it
# and PROBE_ERRORS: what ffmpeg said meanwhile (empty when every packet was read and decoded
# without a word). The decoder keeps every frame's time (-fps_mode passthrough), so frames
# with the same time are an error too. A decoder given frames before the first keyframe
# drops them without a word: compare PROBE_DECODED with PROBE_PACKETS.
declare -A PROBE_CODEC=() PROBE_SIZE=() PROBE_PACKETS=() PROBE_KEYFRAMES=() PROBE_FIRST_KEY=() PROBE_SPAN=() PROBE_DECODED=()
PROBE_ERRORS=
probe_video() {
  local file n=0 inputs=() outputs=() line
  for file in "$@"; do
    [[ -s $file ]] || fail "$file is empty or missing"
    inputs+=(-i "$file")
    outputs+=(-map "$n:v:0" -c copy -copyinkf -f framecrc "packets-$n.crc"
      -map "$n:v:0" -fps_mode passthrough -f framemd5 "decoded-$n.md5")
    n=$((n + 1))
  done
  rm -f packets-*.crc decoded-*.md5
  ffmpeg -nostdin -v error -y "${inputs[@]}" "${outputs[@]}" 2>decode.err || true
  PROBE_ERRORS=$(cat decode.err)
  n=0
  for file in "$@"; do
    # framecrc: "#tb 0: NUM/DEN", "#codec_id 0: NAME", "#dimensions 0: WxH", then a line a
    # packet: stream, dts, pts, duration, size, crc[, F=FLAGS] (no F= for a keyframe alone)
    line=$(awk -F', *' '
      /^#tb 0:/ { split($0, a, ": "); split(a[2], r, "/"); tb = r[1] / r[2] }
      /^#codec_id 0:/ { split($0, a, ": "); codec = a[2] }
      /^#dimensions 0:/ { split($0, a, ": "); size = a[2] }
      /^[^#]/ { n++; key = 1; if (NF >= 7) key = index("13579BDFbdf", substr($7, length($7), 1)) > 0
                if (key) { k++; if (n == 1) first = 1 }
                p = ($3 + 0) * tb; d = ($4 + 0) * tb; pts[n] = p; dur[n] = d
                if (n == 1 || p < lo) lo = p; if (n == 1 || p > hi) hi = p }
      END { # the end: the latest time a frame is shown until (its own duration, or the mean)
            mean = n > 1 ? (hi - lo) / (n - 1) : 0; end = hi
            for (i = 1; i <= n; i++) { e = pts[i] + (dur[i] > 0 ? dur[i] : mean); if (e > end) end = e }
            span = n ? end - lo : 0; if (codec == "") codec = "none"; if (size == "") size = "none"
            printf "%s %s %d %d %d %.3f\n", codec, size, n, k, first, span }' "packets-$n.crc" 2>/dev/null ||
      echo "none none 0 0 0 0")
    read -r "PROBE_CODEC[$file]" "PROBE_SIZE[$file]" "PROBE_PACKETS[$file]" "PROBE_KEYFRAMES[$file]" \
      "PROBE_FIRST_KEY[$file]" "PROBE_SPAN[$file]" <<<"$line"
    PROBE_DECODED[$file]=$(grep -vc '^#' "decoded-$n.md5" 2>/dev/null || true)
    note "$file: ${PROBE_CODEC[$file]} ${PROBE_SIZE[$file]}, ${PROBE_PACKETS[$file]} packets (${PROBE_KEYFRAMES[$file]} key, first key: ${PROBE_FIRST_KEY[$file]}), ${PROBE_DECODED[$file]:-0} decoded, ${PROBE_SPAN[$file]} s"
    n=$((n + 1))
  done
  [[ -z $PROBE_ERRORS ]] || note "ffmpeg said: $(head -n 20 decode.err)"
}

# reference_frames NODE FORMAT: how many frames ffmpeg captures from NODE (input format
# FORMAT: h264, mjpeg, yuyv422 ...) in 3 s: it copies 6 s and counts the frames of the last 3,
# at most 3 s of FEED_FPS (a feeder that falls behind catches up in bursts; a camera does not).
# Not of the first 3 s: v4l2loopback resets its buffers' fields when a reader asks for
# buffers (VIDIOC_REQBUFS), so the first frame a reader takes may be a stale buffer, whole
# (bytesused = sizeimage), stamped with the time of that request, and ffmpeg takes seconds
# under emulation between that frame and the next (the frames meanwhile are skipped).
reference_frames() {
  ffmpeg -nostdin -v error -f v4l2 -input_format "$2" -i "$1" -map 0:v:0 -c copy -t 6 -f framecrc - \
    >reference.crc 2>reference.log || fail "ffmpeg cannot capture from $1: $(tail -3 reference.log)"
  awk -F, -v most=$((3 * FEED_FPS)) '/^#tb 0:/ { split($0, a, ": "); split(a[2], r, "/"); tb = r[1] / r[2] }
    /^[^#]/ { t[n++] = ($3 + 0) * tb }
    END { c = 0; for (i = 0; i < n; i++) if (t[i] > t[n - 1] - 3) c++; if (c > most) c = most; print c }' reference.crc
}

# assert_decodes FILE [FRAMES]: after probe_video: FILE starts with a keyframe, every packet
# decodes (nothing said, one frame a packet), and, given FRAMES, holds that many packets
assert_decodes() {
  local file=$1
  ((${PROBE_PACKETS[$file]:-0} > 0)) || fail "$file has no video packet${2:+ (the events report $2 frames)}"
  [[ -z $PROBE_ERRORS ]] || fail "reading and decoding $file, ffmpeg said: $(head -n 6 decode.err)"
  [[ ${PROBE_FIRST_KEY[$file]:-0} == 1 ]] || fail "$file does not start with a keyframe"
  assert_eq "${PROBE_PACKETS[$file]}" "${PROBE_DECODED[$file]:-0}" "$file: frames decoded from its ${PROBE_PACKETS[$file]} packets"
  if (($# > 1)); then
    assert_eq "$2" "${PROBE_PACKETS[$file]}" "$file: packets in the file against the frames the events report"
  fi
}

# record_events [NDJSON]: read a recording's events (default: last.stdout of `record --json`)
# and set EV_REASON, EV_FRAMES, EV_BYTES, EV_EXIT (the finished event's reason, frames, bytes,
# exitStatus), EV_DROPPED, EV_BEFORE_KEY (its droppedBeforeKeyframe), EV_FILES (its files,
# space-separated), EV_PROGRESS (the number of progress events), EV_SEGMENT_FRAMES[FILE] (each segment event's frames), and
# EV_IMPLAUSIBLE: empty when every progress event is plausible (bytes and frames never fall,
# stay within the finished totals, the last progress event has bytes > 0), else what is not
# (assert_progress fails on it). Fails when there is no finished event.
declare -A EV_SEGMENT_FRAMES=()
record_events() {
  local vars
  vars=$(python3 - "${1:-last.stdout}" <<'PY'
import json, shlex, sys
events = [json.loads(l) for l in open(sys.argv[1]) if l.strip().startswith("{")]
done = [e for e in events if e.get("event") == "finished"]
if not done:
    sys.exit("no finished event")
f = done[-1]
progress = [e for e in events if e.get("event") == "progress"]
problem = ""
last = (0, 0)
for p in progress:
    b, n = p.get("bytes"), p.get("frames")
    if not (isinstance(b, int) and isinstance(n, int)):
        problem = f"a progress event without integer bytes and frames: {p}"
    elif b < last[0] or n < last[1]:
        problem = f"progress falls back to bytes {b}, frames {n} after bytes {last[0]}, frames {last[1]}: {p}"
    elif b > (f.get("bytes") or 0) or n > (f.get("frames") or 0):
        problem = f"progress beyond the finished event's bytes {f.get('bytes')}, frames {f.get('frames')}: {p}"
    else:
        last = (b, n)
        continue
    break
if not problem and progress and progress[-1]["bytes"] <= 0:
    p = progress[-1]
    problem = f"the last progress event reports {p['bytes']} bytes after {p['frames']} frames, {p['duration']} s"
print(f"EV_REASON={shlex.quote(str(f.get('reason')))} EV_FRAMES={int(f.get('frames') or 0)} EV_BYTES={int(f.get('bytes') or 0)}"
      f" EV_EXIT={f.get('exitStatus')} EV_DROPPED={f.get('dropped')} EV_BEFORE_KEY={int(f.get('droppedBeforeKeyframe') or 0)}"
      f" EV_PROGRESS={len(progress)}"
      f" EV_FILES={shlex.quote(' '.join(f.get('files') or []))} EV_IMPLAUSIBLE={shlex.quote(problem)}")
for s in events:
    if s.get("event") == "segment":
        print(f"EV_SEGMENT_FRAMES[{shlex.quote(s['file'])}]={int(s.get('frames') or 0)}")
PY
  ) || { show_last; fail "cannot read the recording's events in ${1:-last.stdout}"; }
  EV_SEGMENT_FRAMES=()
  eval "$vars"
  note "events: $EV_REASON, $EV_FRAMES frames, $EV_BYTES bytes, dropped $EV_DROPPED ($EV_BEFORE_KEY before a keyframe), $EV_PROGRESS progress events, files: $EV_FILES"
}

# assert_progress: after record_events: every progress event was plausible
assert_progress() {
  [[ -z $EV_IMPLAUSIBLE ]] || { cat "${1:-last.stdout}" >&2; fail "implausible progress: $EV_IMPLAUSIBLE"; }
}

# check_recording FILE CODEC LEAST TOLERANCE: after `record ... --max-duration 3 --json FILE`
# from a loopback camera (its output in last.stdout): the recording stopped at the limit
# with status 0; FILE holds CODEC video of the feed's size that starts with a keyframe and
# decodes whole, as many packets as the finished event's frames and as many bytes as its
# bytes; the progress events are plausible; the video lasts 3 s within TOLERANCE seconds;
# and it holds at least LEAST frames
check_recording() {
  local file=$1 codec=$2 least=$3 tolerance=$4
  cp last.stdout "$file.events"
  record_events
  assert_eq max-duration "$EV_REASON" "$file: finished reason"
  assert_eq 0 "$EV_EXIT" "$file: exitStatus"
  probe_video "$file"
  assert_eq "$codec" "${PROBE_CODEC[$file]}" "$file: codec"
  assert_eq "$FEED_SIZE" "${PROBE_SIZE[$file]}" "$file: picture size"
  assert_decodes "$file" "$EV_FRAMES"
  assert_eq "$(stat -c %s "$file")" "$EV_BYTES" "$file: the finished event's bytes against the file's size"
  assert_progress
  within "${PROBE_SPAN[$file]}" 3 "$tolerance" ||
    fail "$file: the video lasts ${PROBE_SPAN[$file]} s; the limit is 3 s (tolerance $tolerance s)"
  ((EV_FRAMES >= least)) || fail "$file: $EV_FRAMES frames in 3 s; expected at least $least"
}
