#!/usr/bin/env bash
# `make bench`: runs the benchmarks behind docs/benchmarks.md and prints its
# table, one Markdown row per guard: what is measured, the figure, what it
# is compared with (and the guard's mark), and the command that measures
# it. Figures are reported, never asserted: nothing here fails because a
# figure is past its mark, only because a benchmark could not run.
#
#   BIN=bin/nova IMAGE=<tag> IMAGE_CONTEXT=bin/image .ci/bench.sh
#
# The Makefile builds BIN (`make build`) and the image (`make image`) first.
# Each benchmark's own output stays in BENCH_OUT (default bin/bench).
set -euo pipefail
cd "$(dirname "$0")/.."

GO="${GO:-go}"
bin="${BIN:?BIN: the stripped nova binary (make build)}"
image="${IMAGE:?IMAGE: the image make image built}"
context="${IMAGE_CONTEXT:?IMAGE_CONTEXT: the image build context (make image)}"
out="${BENCH_OUT:-bin/bench}"
mkdir -p "$out"
rm -f "$out"/*.txt

# cmd_NAME is the command that measured NAME, for the table.
declare -A cmd

# bench NAME PKG BENCHMARK BENCHTIME [FLAG...]: one benchmark (a -bench
# pattern anchored at both ends) into $out/NAME.txt; FLAGs (a -timeout the
# benchmark needs) are part of the command shown.
bench() {
  local name=$1 pkg=$2 pattern=$3 benchtime=$4 flags=("${@:5}")
  cmd[$name]="go test $pkg -run '^\$' -bench '^$pattern\$' -benchtime $benchtime${flags[*]:+ ${flags[*]}}"
  echo "bench: ${cmd[$name]}" >&2
  if ! "$GO" test "$pkg" -run '^$' -bench "^$pattern\$" -benchtime "$benchtime" -timeout 60m "${flags[@]}" >"$out/$name.txt" 2>&1; then
    cat "$out/$name.txt" >&2
    echo "bench: $name did not run" >&2
    exit 1
  fi
}

# metric NAME BENCHMARK UNIT: UNIT's figure on BENCHMARK's line of NAME's
# output ("BenchmarkX/sub-2   10   123 ns/op   4.5 unit ...").
metric() {
  awk -v b="$2" -v u="$3" '
    { name = $1; sub(/-[0-9]+$/, "", name) }
    $1 == b || name == b { for (i = 3; i < NF; i++) if ($(i + 1) == u) { print $i; found = 1; exit } }
    END { if (!found) exit 1 }' "$out/$1.txt" || {
    echo "bench: no $3 for $2 in $out/$1.txt" >&2
    exit 1
  }
}

# per A B: A divided by B.
per() { awk -v a="$1" -v b="$2" 'BEGIN { print a / b }'; }
mb() { printf '%.1f MB' "$(per "$1" 1e6)"; }

bench run ./action BenchmarkRunNoChange 10x
bench gate ./runner/evidence BenchmarkGateHistoryPending 100x
bench gatewide ./runner/evidence BenchmarkGateWide 100x
bench gateother ./runner/evidence BenchmarkGateAfterOther 100x
bench append ./runner/evidence 'BenchmarkEvidenceAppend/batch-10' 500x
bench appendtransport ./runner/evidence 'BenchmarkEvidenceAppend/batch-10-file-transport' 500x
bench verify ./runner/evidence BenchmarkEvidenceVerify 5x
bench policy ./stages/policy/rego BenchmarkPolicyVsConftest500 10x
bench query ./action 'BenchmarkEvidenceQuery100k/filtered' 5x
bench matrixchanged ./action 'BenchmarkMonorepo10000/matrix-changed' 4x
bench validateall ./action 'BenchmarkMonorepo10000/validate-all' 1x -timeout 40m

# Every figure is read before the table is printed, so a missing one stops
# the script instead of leaving a blank cell.
bare=$(metric run BenchmarkRunNoChange bare-ms)
for side in receipt plan; do
  for m in ratio ms tf-calls; do
    declare "run_${side}_${m//-/_}=$(metric run BenchmarkRunNoChange "$side-$m")"
  done
done
for g in gate:BenchmarkGateHistoryPending gatewide:BenchmarkGateWide gateother:BenchmarkGateAfterOther; do
  name=${g%%:*} b=${g#*:}
  declare "${name}_ratio=$(metric "$name" "$b" ratio)"
  declare "${name}_small=$(per "$(metric "$name" "$b" µs/gate-10)" 1000)"
  declare "${name}_large=$(per "$(metric "$name" "$b" µs/gate-10000)" 1000)"
done
append=$(metric append BenchmarkEvidenceAppend/batch-10 events/s)
appendtransport=$(metric appendtransport BenchmarkEvidenceAppend/batch-10-file-transport events/s)
verify=$(metric verify BenchmarkEvidenceVerify events/s)
policy_nova_cpu=$(metric policy BenchmarkPolicyVsConftest500 nova-cpu-ms)
policy_nova_wall=$(metric policy BenchmarkPolicyVsConftest500 nova-ms)
policy_conf_cpu=$(metric policy BenchmarkPolicyVsConftest500 conftest-cpu-ms)
policy_conf_wall=$(metric policy BenchmarkPolicyVsConftest500 conftest-ms)
policy_x=$(metric policy BenchmarkPolicyVsConftest500 x-cpu)
query=$(per "$(metric query BenchmarkEvidenceQuery100k/filtered ns/op)" 1e9)
for side in matrix-changed validate-all; do
  for m in s cpu-s; do
    declare "mono_${side//-/_}_${m//-/_}=$(metric "${side//-/}" "BenchmarkMonorepo10000/$side" "$m")"
  done
done
image_bytes=$(docker image inspect -f '{{.Size}}' "$image")
nova_bytes=$(stat -c %s "$context/nova")
tf_bytes=$(stat -c %s "$context/terraform")
tofu_bytes=$(stat -c %s "$context/tofu")
bin_bytes=$(stat -c %s "$bin")

export LC_ALL=C
row() { printf '| %s | %s | %s | `%s` |\n' "$@"; }
bare_cmds='bare `terraform init`, `plan -out`, `show -json`, `apply` on the same root'
echo '| guard | figure | compared with | command |'
echo '|---|---|---|---|'
row 'no-change `nova run`, dev last applied this change (a receipt)' \
  "$(printf '%.2f× (%.0f ms, %.0f terraform call)' "$run_receipt_ratio" "$run_receipt_ms" "$run_receipt_tf_calls")" \
  "$(printf '%s (%.0f ms); guard ≤ 1.1×' "$bare_cmds" "$bare")" "${cmd[run]}"
row 'no-change `nova run`, dev applied another change since (a no-change plan)' \
  "$(printf '%.2f× (%.0f ms, %.0f terraform calls)' "$run_plan_ratio" "$run_plan_ms" "$run_plan_tf_calls")" \
  "$(printf '%s (%.0f ms); guard ≤ 1.1×' "$bare_cmds" "$bare")" "${cmd[run]}"
row "the gate of a run, contract with 10 000 past events" \
  "$(printf '%.2f× (%.1f ms)' "$gate_ratio" "$gate_large")" \
  "$(printf 'the same with 10 past events (%.1f ms); guard ≤ 1.2×' "$gate_small")" "${cmd[gate]}"
row "the gate of a run, repo holding 10 000 contracts" \
  "$(printf '%.2f× (%.1f ms)' "$gatewide_ratio" "$gatewide_large")" \
  "$(printf 'the same beside 10 contracts (%.1f ms); guard ≤ 1.2×' "$gatewide_small")" "${cmd[gatewide]}"
row "the gate after another runner's run, 10 000 past events" \
  "$(printf '%.2f× (%.1f ms)' "$gateother_ratio" "$gateother_large")" \
  "$(printf 'the same with 10 past events (%.1f ms); guard ≤ 1.2×' "$gateother_small")" "${cmd[gateother]}"
row "evidence append, a run's batches of 10, local repo" \
  "$(printf '%.0f events/s' "$append")" "guard ≥ 500 events/s" "${cmd[append]}"
row "evidence append, a run's batches of 10, through git's transport" \
  "$(printf '%.0f events/s' "$appendtransport")" "guard ≥ 500 events/s" "${cmd[appendtransport]}"
row '`nova evidence verify`, 10 000 events' \
  "$(printf '%.0f events/s' "$verify")" "guard ≥ 2 000 events/s" "${cmd[verify]}"
row "policy: the platform rules compiled and evaluated on a 500-change plan" \
  "$(printf 'conftest takes %.2f× Nova'"'"'s CPU (Nova %.0f ms CPU, %.0f ms wall)' "$policy_x" "$policy_nova_cpu" "$policy_nova_wall")" \
  "$(printf '`conftest test` on the same rules and document (%.0f ms CPU, %.0f ms wall); guard ≥ 1×' "$policy_conf_cpu" "$policy_conf_wall")" "${cmd[policy]}"
row '`nova evidence query` over 100 000 events, repo local and indexed' \
  "$(printf '%.2f s' "$query")" "who approved what in prod, as JSON Lines" "${cmd[query]}"
row '`nova matrix --changed`, a change to every one of 10 000 contracts' \
  "$(printf '%.1f s (%.1f s CPU), 256 jobs' "$mono_matrix_changed_s" "$mono_matrix_changed_cpu_s")" "goal ≤ 2 s on 2 cores" "${cmd[matrixchanged]}"
row '`nova validate --all`, 10 000 contracts' \
  "$(printf '%.1f s (%.1f s CPU)' "$mono_validate_all_s" "$mono_validate_all_cpu_s")" "goal ≤ 30 s on 2 cores" "${cmd[validateall]}"
row "the shipped image" "$(mb "$image_bytes")" \
  "nova $(mb "$nova_bytes") + terraform $(mb "$tf_bytes") + tofu $(mb "$tofu_bytes") + CA bundle" "make image && docker image inspect -f '{{.Size}}' ${image%:*}:<version>"
row "the nova binary, static and stripped" "$(mb "$bin_bytes")" "no mark" "make build && stat -c %s $bin"

# The forge API budget (docs/forge-limits.md): a pull request changing N
# contracts, reported by one job through the GitHub fake and a real Gitea.
# Its own table, one row per forge and N, read whole before it is printed.
bench forgebudget ./action BenchmarkForgeBudget 1x
budget_rows=()
for forge in github gitea; do
  for n in 1 10 100 1000; do
    b="BenchmarkForgeBudget/$forge-$n"
    budget_rows+=("$(printf '| %s, %s contract(s) | %.2f | %.0f (%.0f bytes) | %.0f ms | %.0f ms | `%s` |' "$forge" "$n" \
      "$(metric forgebudget "$b" calls/contract-env)" "$(metric forgebudget "$b" comments)" "$(metric forgebudget "$b" comment-bytes)" \
      "$(metric forgebudget "$b" selection-ms)" "$(metric forgebudget "$b" fanout-ms)" "${cmd[forgebudget]}")")
  done
done
echo
echo '| forge, pull request | API calls per contract-environment (goal ≤ 3) | comments (bytes) | selection (`nova matrix --changed`) | fan-out (the job, every contract) | command |'
echo '|---|---|---|---|---|---|'
printf '%s\n' "${budget_rows[@]}"

# The sharded fan-out's whole budget (docs/forge-limits.md): every shard
# job and the summary job of one pull request, through the GitHub fake.
bench fanoutbudget ./action BenchmarkFanoutBudget 1x
echo
echo '| fan-out of a pull request (GitHub fake, every job) | API calls per contract-environment (goal ≤ 3) | comments (bytes) | command |'
echo '|---|---|---|---|'
for n in 10 11 100 1000; do
  b="BenchmarkFanoutBudget/github-$n"
  printf '| %s contract(s) | %.2f | %.0f (%.0f bytes) | `%s` |\n' "$n" \
    "$(metric fanoutbudget "$b" calls/contract-env)" "$(metric fanoutbudget "$b" comments)" "$(metric fanoutbudget "$b" comment-bytes)" "${cmd[fanoutbudget]}"
done
