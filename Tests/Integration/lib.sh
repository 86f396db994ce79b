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
trap 'echo "FAIL: ${BASH_SOURCE[0]##*/}:$LINENO: \`$BASH_COMMAND\` exited with status $?" >&2' ERR

# --- reporting ------------------------------------------------------------------------

# note MESSAGE...: a line in the test's log
note() { echo "--- [${SECONDS}s] $*" >&2; }

# fail MESSAGE...: fail the test now
fail() {
  trap - ERR
  echo "FAIL: $*" >&2
  exit 1
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

# largest_gap FILE [STREAM]: the longest time between consecutive frames (seconds)
largest_gap() {
  packet_times "$1" "${2:-v:0}" | awk 'NR > 1 && $1 - p > m { m = $1 - p } { p = $1 } END { printf "%.6f\n", m }'
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
