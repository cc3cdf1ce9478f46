#!/usr/bin/env bash
# Trainbench against the Hugging Face PyTorch loop, on the same machine, in one go:
#   bench/peer/compare.sh PRESET "m K" ["m K" ...]      e.g. compare.sh tiny "8 2" "16 1"
# Four sides: ours; the peer loop on transformers 4.57.1 (the first peer, kept for
# continuity), on the newest release (NEWEST, default 5.24.0) eager, and on it with
# torch.compile(model). All get the same model and weights (the peers load the directory
# `export-hf` writes; checked: equal validation loss first), the same token data, m, K, AdamW
# and clipping, 2 threads, fp32 (DTYPE=bf16: bf16 autocast on both sides). Runs alternate
# A B C D (ROUNDS times, default 3); the medians of per-step time after WARMUP steps (the
# compiled peer compiles in its first steps) are reported with our ratio to each, and each
# process's peak resident memory. SIDES limits the peers ("4.57 5 5c" by default). Prints one
# JSON line per (m, K).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
preset="$1"; shift
steps="${STEPS:-30}"; warmup="${WARMUP:-5}"; rounds="${ROUNDS:-3}"
cli="$root/build/bin/trainbench-cli"
python="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}/bin/python"
bash "$root/scripts/setup-system.sh" time >&2  # /usr/bin/time measures each side's peak RSS
newest="${NEWEST:-5.24.0}"
sides="${SIDES:-4.57 5 5c}"
# DTYPE=bf16: ours with runtime.dtype bf16, the peers' forward under CPU bf16 autocast (fp32 by default).
dtype="${DTYPE:-fp32}"
declare -A site
site[4.57]="$(TRANSFORMERS_VERSION=4.57.1 bash "$root/bench/peer/setup-peer.sh")"
site[5]="$(TRANSFORMERS_VERSION="$newest" bash "$root/bench/peer/setup-peer.sh")"
site[5c]="${site[5]}"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

# Token data both sides read: a noisy arithmetic sequence over the model's vocabulary.
vocab="$("$cli" config "$root/configs/$preset.json" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["model"]["vocab_size"])')"
"$python" "$root/bench/make_token_data.py" "$work" "$vocab"

for split in "$@"; do
  read -r m k <<<"$split"
  sets=(--set data.source=tokens --set "data.path=$work/train.bin" --set "data.val_path=$work/val.bin"
        --set "train.micro_batch_size=$m" --set "train.gradient_accumulation_steps=$k" --set train.global_batch_size=null
        --set "train.steps=$steps" --set train.eval_every=0 --set train.checkpoint_every=0 --set runtime.threads=2
        --set "runtime.dtype=$dtype")
  "$cli" config "$root/configs/$preset.json" "${sets[@]}" >"$work/config.json"
  "$cli" init "$root/configs/$preset.json" "${sets[@]}" --seed 7 --out "$work/init.safetensors" >/dev/null
  rm -rf "$work/init-hf"
  "$cli" export-hf --checkpoint "$work/init.safetensors" "$root/configs/$preset.json" "${sets[@]}" --dtype fp32 \
    --out "$work/init-hf" >/dev/null 2>&1
  ours_eval="$("$cli" eval "$root/configs/$preset.json" "${sets[@]}" --checkpoint "$work/init.safetensors")"
  declare -A evals=() times=() rss=()
  for side in $sides; do
    evals[$side]="$(PYTHONPATH="${site[$side]}" "$python" "$root/bench/peer/hf_peer.py" eval "$work/config.json" "$work/init-hf" "$work/val.bin" 2>/dev/null)"
  done
  ours_times=(); ours_rss=()
  for ((r = 0; r < rounds; r++)); do
    /usr/bin/time -f "%M" -o "$work/rss" "$cli" run "$root/configs/$preset.json" "${sets[@]}" \
      --store "$work/store" --name "bench-$m-$k" >"$work/ours.json" 2>/dev/null
    run_id="$("$python" -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])["run_id"])' "$work/ours.json")"
    ours_times+=("$("$cli" export "$run_id" --store "$work/store" --format jsonl | "$python" -c '
import json, sys, statistics
w = int(sys.argv[1])
t = [p["value"] for p in map(json.loads, sys.stdin) if p["key"] == "perf/step_time_s" and p["step"] > w]
print(statistics.median(t))' "$warmup")")
    ours_rss+=("$(cat "$work/rss")")
    for side in $sides; do
      flags=(); [ "$side" = 5c ] && flags=(--compile)
      [ "$dtype" = bf16 ] && flags+=(--bf16)
      /usr/bin/time -f "%M" -o "$work/rss" env PYTHONPATH="${site[$side]}" "$python" "$root/bench/peer/hf_peer.py" train \
        "$work/config.json" "$work/init-hf" "$work/train.bin" --steps "$steps" --warmup "$warmup" --threads 2 "${flags[@]}" \
        >"$work/peer.json" 2>/dev/null
      times[$side]+="$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s_median"])' "$work/peer.json") "
      rss[$side]+="$(cat "$work/rss") "
    done
  done
  peers="[]"
  for side in $sides; do
    peers="$("$python" -c 'import json,sys; p=json.loads(sys.argv[1]); p.append({"side": sys.argv[2], "eval": json.loads(sys.argv[3]), "times": sys.argv[4], "rss": sys.argv[5]}); print(json.dumps(p))' \
      "$peers" "$side" "${evals[$side]}" "${times[$side]}" "${rss[$side]}")"
  done
  "$python" - "$preset" "$m" "$k" "$ours_eval" "${ours_times[*]}" "${ours_rss[*]}" "$peers" "$work/config.json" "$newest" <<'PY'
import json, statistics, sys
preset, m, k, ours_eval, ours_t, ours_rss, peers, config, newest = sys.argv[1:]
c = json.load(open(config))
tokens = int(m) * int(k) * c["train"]["seq_len"]
med = lambda s: statistics.median(float(v) for v in s.split())
ours = tokens / med(ours_t)
out = {"preset": preset, "m": int(m), "K": int(k), "tokens_per_step": tokens,
       "init_loss_ours": json.loads(ours_eval)["loss"], "tokens_per_s_ours": round(ours),
       "peak_rss_mib_ours": round(med(ours_rss) / 1024)}
names = {"4.57": "hf4.57", "5": "hf" + newest, "5c": "hf" + newest + "_compiled"}
for p in json.loads(peers):
    name = names[p["side"]]
    peer = tokens / med(p["times"])
    # Each round's runs follow each other: the median of their ratios resists the machine's
    # drift between rounds better than the ratio of medians does.
    paired = statistics.median(float(q) / float(o) for o, q in zip(ours_t.split(), p["times"].split()))
    out.update({f"init_loss_{name}": p["eval"]["loss"], f"tokens_per_s_{name}": round(peer),
                f"ratio_{name}": round(ours / peer, 2), f"paired_{name}": round(paired, 2),
                f"peak_rss_mib_{name}": round(med(p["rss"]) / 1024)})
print(json.dumps(out))
PY
done
