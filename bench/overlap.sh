#!/usr/bin/env bash
# Overlapped against deferred gradient reduction: bench/overlap.sh PRESET "m K" (W = 2, one
# thread per rank), three alternating rounds, median perf/step_time_s after step 5 per run.
set -e
cd "$(dirname "$0")/.."
cli=build/bin/trainbench-cli; py=~/.cache/trainbench/torch-2.11.0/bin/python
preset=$1; split=($2)
for round in 1 2 3; do for ov in true false; do
 st=$(mktemp -d)
 $cli run configs/$preset.json --store $st --name x --set train.micro_batch_size=${split[0]} --set train.gradient_accumulation_steps=${split[1]} --set runtime.world_size=2 --set train.global_batch_size=null --set train.steps=${STEPS:-30} --set train.eval_every=0 --set train.checkpoint_every=0 --set runtime.threads=1 --set runtime.overlap_reduction=$ov > $st/out.json 2>/dev/null
 id=$($py -c 'import json,sys;print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["run_id"])' $st/out.json)
 t=$($cli export $id --store $st --format jsonl | $py -c '
import json,sys,statistics
p=[json.loads(l) for l in sys.stdin]
print(statistics.median([x["value"] for x in p if x["key"]=="perf/step_time_s" and x["step"]>5]))')
 echo "$preset ${split[*]} overlap=$ov round=$round step_time=$t"
 rm -rf $st
done; done
