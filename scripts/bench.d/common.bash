# Helpers the benchmarks share (sourced, not a benchmark: scripts/bench lists *.sh only).
# measure needs $work, the benchmark's scratch folder.

# median: the median of the numbers on stdin, one a line.
median() { sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# measure COMMAND...: runs it once, its stdout to $work/stdout.txt; prints "CPU_SECONDS
# PEAK_KIB". The CPU time (user + system) comes from the shell's `times`, to the
# millisecond, for the subshell's children (the command, under /usr/bin/time, which gives
# the peak memory but prints CPU seconds to two decimals only). A command that fails ends
# the benchmark with its stderr.
measure() {
  local clock
  clock=$(/usr/bin/time -f '%M' -o "$work/time.txt" "$@" >"$work/stdout.txt" 2>"$work/stderr.txt" || exit 1; times) || {
    echo "bench: failed: $*" >&2
    cat "$work/stderr.txt" >&2
    exit 1
  }
  # times prints "USERmSS.SSSs SYSmSS.SSSs" for the shell, then for its children.
  awk -v peak="$(cat "$work/time.txt")" 'NR == 2 {
      split($1, u, /[ms]/); split($2, s, /[ms]/)
      printf "%.3f %d\n", u[1] * 60 + u[2] + s[1] * 60 + s[2], peak }' <<<"$clock"
}

# service_binaries: builds capctl and capctl-serve (release in ${BENCH_SCRATCH:-.build-bench}, or
# the debug build with CAPCTL_BENCH_DEBUG=1) and prints the folder that holds them.
service_binaries() {
  if [[ ${CAPCTL_BENCH_DEBUG:-} == 1 ]]; then
    swift build --product capctl-serve >&2
    swift build --product capctl >&2
    echo .build/debug
  else
    local scratch=${BENCH_SCRATCH:-.build-bench}
    echo "building capctl and capctl-serve (release)..." >&2
    swift build -c release --product capctl --scratch-path "$scratch" >&2
    swift build -c release --product capctl-serve --scratch-path "$scratch" >&2
    swift build -c release --scratch-path "$scratch" --show-bin-path
  fi
}
