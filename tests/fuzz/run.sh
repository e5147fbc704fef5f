#!/usr/bin/env bash
# Runs each libFuzzer target of BUILD/fuzz for SECONDS, from its seed corpus in
# tests/fuzz/corpus/NAME; new inputs land in BUILD/corpus/NAME, crashing ones in BUILD/crashes/.
# Usage: tests/fuzz/run.sh BUILD SECONDS NAME...
build=$1; secs=$2; shift 2
mkdir -p "$build/crashes"
failed=()
for name in "$@"; do
  mkdir -p "$build/corpus/$name" "tests/fuzz/corpus/$name"
  echo "== fuzz_$name (${secs}s)"
  if ! "$build/fuzz/fuzz_$name" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
       -artifact_prefix="$build/crashes/$name-" "$build/corpus/$name" "tests/fuzz/corpus/$name" 2>"$build/fuzz_$name.log"; then
    failed+=("$name")
    grep -E "ERROR|SUMMARY|Test unit written" "$build/fuzz_$name.log" | head -5
  fi
  grep -E "stat::number_of_executed_units|cov:" "$build/fuzz_$name.log" | tail -2
done
[ ${#failed[@]} -gt 0 ] && { echo "fuzz: crashes in ${failed[*]} (inputs in $build/crashes/)"; exit 1; }
echo "fuzz: ${#@} targets, no crash"
