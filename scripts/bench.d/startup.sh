#!/usr/bin/env bash
# Start-up of probe commands: capctl list-devices vs v4l2-ctl --list-devices, capctl --version vs ffmpeg -version.
#
# Usage: scripts/bench startup [RUNS]   (default 50 runs of each)
#        CAPCTL=PATH   the capctl to measure (default: the binary the Debian package ships,
#                      built by scripts/package.d/build)
#
# Wall time: hyperfine, without a shell in between (-N), 5 warm-up runs, then RUNS runs of
# each command; the median. Peak memory: the maximum resident set size /usr/bin/time
# reports (%M, KiB) over RUNS more runs; the median. Ratios are of the medians.
# Targets: capctl list-devices at most 3x v4l2-ctl's time and 2.5x its peak memory.
# On a machine without a camera both list none (v4l2-ctl then exits 1, which is ignored);
# capctl still lists the ALSA default device and its virtual devices.
set -euo pipefail
cd "$(dirname "$0")/../.."
runs=${1:-50}
for tool in hyperfine v4l2-ctl ffmpeg /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "bench startup: no $tool (scripts/setup installs it)" >&2; exit 1; }
done
if [[ -z ${CAPCTL:-} ]]; then
  echo "building capctl as packaged..." >&2
  CAPCTL=$(scripts/package.d/build --capctl-only)
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

commands=("$CAPCTL list-devices" "v4l2-ctl --list-devices" "$CAPCTL --version" "ffmpeg -version")
hyperfine -N -i --warmup 5 --runs "$runs" --style none --export-json "$work/wall.json" "${commands[@]}" >/dev/null 2>&1

# median_rss COMMAND...: the median peak resident set size (KiB) of RUNS runs
median_rss() {
  local i
  for ((i = 0; i < runs; i++)); do
    /usr/bin/time -f '%M' -o "$work/rss" "$@" >/dev/null 2>&1 || true
    tail -1 "$work/rss"
  done | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

declare -A rss
for command in "${commands[@]}"; do
  # shellcheck disable=SC2086  # each command is words
  rss[$command]=$(median_rss $command)
done

python3 - "$work/wall.json" "$CAPCTL" "${rss["$CAPCTL list-devices"]}" "${rss["v4l2-ctl --list-devices"]}" \
  "${rss["$CAPCTL --version"]}" "${rss["ffmpeg -version"]}" "$runs" <<'EOF'
import json, sys
wall_file, capctl, rss_list, rss_v4l2, rss_version, rss_ffmpeg, runs = sys.argv[1:]
medians = [r["median"] * 1000 for r in json.load(open(wall_file))["results"]]
rows = [("capctl list-devices", medians[0], float(rss_list)), ("v4l2-ctl --list-devices", medians[1], float(rss_v4l2)),
        ("capctl --version", medians[2], float(rss_version)), ("ffmpeg -version", medians[3], float(rss_ffmpeg))]
print(f"capctl: {capctl}; {runs} runs each (medians)")
print(f"{'command':<26}{'wall ms':>10}{'peak MiB':>10}")
for name, wall, rss in rows:
    print(f"{name:<26}{wall:>10.2f}{rss / 1024:>10.1f}")
def ratio(a, b, target=None):
    wall, mem = rows[a][1] / rows[b][1], rows[a][2] / rows[b][2]
    line = f"{rows[a][0]} / {rows[b][0]}: wall {wall:.2f}x, peak memory {mem:.2f}x"
    if target:
        line += f"  (targets {target[0]}x, {target[1]}x: {'met' if wall <= target[0] else 'NOT met'}, {'met' if mem <= target[1] else 'NOT met'})"
    print(line)
ratio(0, 1, (3, 2.5))
ratio(2, 3)
EOF
