#!/usr/bin/env bash
# All-reduce benchmark between two network-namespace hosts on this machine (issue #3, Performance):
# at 64 MiB, >= 5 alternating rounds of {fabkit socket all-reduce, raw full-duplex exchange, Gloo
# TCP allreduce}; prints each round and the medians of the ratios fabkit/raw and fabkit/gloo.
# Alternating and taking medians of per-round ratios because this machine's TCP throughput swings
# by 2x between runs; a ratio within one round compares contenders under the same noise.
#
# Usage (root): bench/allreduce/run_bench.sh BUILD_DIR [ROUNDS=7] [SIZE_BYTES=67108864] [ITERS=10]
set -euo pipefail
BUILD=${1:?usage: run_bench.sh BUILD_DIR [ROUNDS] [SIZE_BYTES] [ITERS]}
ROUNDS=${2:-7}
SIZE=${3:-67108864}
ITERS=${4:-10}
TOOL="$BUILD/bench/allreduce/fabkit-allreduce-rank"
[ -x "$TOOL" ] || { echo "run_bench.sh: $TOOL not built (ninja -C $BUILD fabkit-allreduce-rank)" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run_bench.sh: needs root for ip netns" >&2; exit 2; }

ID="fkb$$"
NS0="${ID}a"; NS1="${ID}b"
# 198.18.0.0/15 is the benchmarking range (RFC 2544); a per-run /30-ish pair from the PID.
OCT=$(( ($$ % 200) + 20 ))
A0="198.18.$OCT.1"; A1="198.18.$OCT.2"
cleanup() { ip netns del "$NS0" 2>/dev/null || true; ip netns del "$NS1" 2>/dev/null || true; }
trap cleanup EXIT INT TERM
ip netns add "$NS0"; ip netns add "$NS1"
ip link add "${ID}v0" type veth peer name "${ID}v1"
ip link set "${ID}v0" netns "$NS0"; ip link set "${ID}v1" netns "$NS1"
ip -n "$NS0" addr add "$A0/24" dev "${ID}v0"; ip -n "$NS1" addr add "$A1/24" dev "${ID}v1"
for ns in "$NS0" "$NS1"; do ip -n "$ns" link set lo up; done
ip -n "$NS0" link set "${ID}v0" up; ip -n "$NS1" link set "${ID}v1" up

export FABKIT_TOKEN="bench-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
PORT=29400
run_pair() {  # transport -> prints busbw_gbps of rank 0 (JSON on stdout of each rank)
  local t=$1 out0 out1
  out0=$(mktemp); out1=$(mktemp)
  ip netns exec "$NS0" "$TOOL" --transport "$t" --rank 0 --local "$A0" --port $PORT \
      --sizes "$SIZE" --iters "$ITERS" --warmup 2 --timeout-ms 20000 ${EXTRA:-} >"$out0" &
  local p0=$!
  ip netns exec "$NS1" "$TOOL" --transport "$t" --rank 1 --local "$A1" --peer "$A0" --port $PORT \
      --sizes "$SIZE" --iters "$ITERS" --warmup 2 --timeout-ms 20000 ${EXTRA:-} >"$out1" &
  local p1=$!
  wait $p0 || true; wait $p1 || true
  /usr/bin/python3 - "$out0" "$out1" <<'PY'
import json, sys
runs = [json.load(open(p)) for p in sys.argv[1:]]
for r in runs:
    if r["status"] != "ok" or not all(s["correct"] for s in r["sizes"]):
        print("FAIL", r["status"], r["reason"], file=sys.stderr); print("nan"); sys.exit()
# The slower rank's time is the collective's time.
print(min(r["sizes"][0]["busbw_gbps"] for r in runs))
PY
  rm -f "$out0" "$out1"
  PORT=$((PORT + 1))
}

echo "size ${SIZE} B, ${ITERS} timed iterations per run, busbw GB/s (nccl-tests convention)"
printf "%-6s %10s %10s %10s %12s %12s\n" round fabkit raw gloo fabkit/raw fabkit/gloo
RATIOS=$(mktemp)
for r in $(seq 1 "$ROUNDS"); do
  # Rotate the order each round so no contender always runs first (or right after another).
  case $((r % 3)) in
    1) order="fabkit raw gloo-tcp" ;; 2) order="raw gloo-tcp fabkit" ;; 0) order="gloo-tcp fabkit raw" ;;
  esac
  declare -A bw=()
  for t in $order; do bw[$t]=$(run_pair "$t"); done
  /usr/bin/python3 - "$r" "${bw[fabkit]}" "${bw[raw]}" "${bw[gloo-tcp]}" <<'PY' | tee -a "$RATIOS"
import sys
r, f, w, g = sys.argv[1], *map(float, sys.argv[2:])
print(f"{r:<6} {f:10.3f} {w:10.3f} {g:10.3f} {f/w:12.3f} {f/g:12.3f}")
PY
done
/usr/bin/python3 - "$RATIOS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
col = lambda i: [float(r[i]) for r in rows]
print(f"median busbw: fabkit {statistics.median(col(1)):.3f}  raw {statistics.median(col(2)):.3f}  "
      f"gloo {statistics.median(col(3)):.3f} GB/s")
fr, fg = statistics.median(col(4)), statistics.median(col(5))
print(f"median ratio fabkit/raw  = {fr:.3f}  (target >= 0.9: {'met' if fr >= 0.9 else 'NOT met'})")
print(f"median ratio fabkit/gloo = {fg:.3f}  (target >= 1.1: {'met' if fg >= 1.1 else 'NOT met'})")
PY
rm -f "$RATIOS"
