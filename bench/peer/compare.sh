#!/usr/bin/env bash
# Trainbench against the Hugging Face PyTorch loop, on the same machine, in one go:
#   bench/peer/compare.sh PRESET "m K" ["m K" ...]      e.g. compare.sh tiny "8 2" "16 1"
# Both sides get the same model and weights (checked: equal validation loss first), the same
# token data, m, K, AdamW and clipping, 2 threads, fp32. Runs alternate A B A B (ROUNDS times,
# default 3); the medians of per-step time after WARMUP steps are reported with their ratio,
# and each process's peak resident memory. Prints one JSON line per (m, K).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
preset="$1"; shift
steps="${STEPS:-30}"; warmup="${WARMUP:-5}"; rounds="${ROUNDS:-3}"
cli="$root/build/bin/trainbench-cli"
python="${TRAINBENCH_TORCH_ENV:-$HOME/.cache/trainbench/torch-2.11.0}/bin/python"
bash "$root/scripts/setup-system.sh" time >&2  # /usr/bin/time measures each side's peak RSS
peer_site="$(bash "$root/bench/peer/setup-peer.sh")"
work="$(mktemp -d)"; trap 'rm -rf "$work"' EXIT

# Token data both sides read: a noisy arithmetic sequence over the model's vocabulary.
vocab="$("$cli" config "$root/configs/$preset.json" | "$python" -c 'import json,sys; print(json.load(sys.stdin)["model"]["vocab_size"])')"
"$python" - "$work" "$vocab" <<'PY'
import sys, numpy as np
work, vocab = sys.argv[1], int(sys.argv[2])
rng = np.random.default_rng(0)
n = 2_000_000
noise = rng.integers(0, 4, n)
x = np.zeros(n, dtype=np.int64)
for i in range(1, n):
    x[i] = (x[i - 1] * 7 + noise[i]) % vocab
x = x.astype("<u2")
x[: n * 9 // 10].tofile(f"{work}/train.bin")
x[n * 9 // 10:].tofile(f"{work}/val.bin")
PY

for split in "$@"; do
  read -r m k <<<"$split"
  sets=(--set data.source=tokens --set "data.path=$work/train.bin" --set "data.val_path=$work/val.bin"
        --set "train.micro_batch_size=$m" --set "train.gradient_accumulation_steps=$k" --set train.global_batch_size=null
        --set "train.steps=$steps" --set train.eval_every=0 --set train.checkpoint_every=0 --set runtime.threads=2)
  "$cli" config "$root/configs/$preset.json" "${sets[@]}" >"$work/config.json"
  "$cli" init "$root/configs/$preset.json" "${sets[@]}" --seed 7 --out "$work/init.safetensors" >/dev/null
  ours_eval="$("$cli" eval "$root/configs/$preset.json" "${sets[@]}" --checkpoint "$work/init.safetensors")"
  peer_eval="$(PYTHONPATH="$peer_site" "$python" "$root/bench/peer/hf_peer.py" eval "$work/config.json" "$work/init.safetensors" "$work/val.bin")"
  ours_times=(); peer_times=(); ours_rss=(); peer_rss=()
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
    /usr/bin/time -f "%M" -o "$work/rss" env PYTHONPATH="$peer_site" "$python" "$root/bench/peer/hf_peer.py" train \
      "$work/config.json" "$work/init.safetensors" "$work/train.bin" --steps "$steps" --warmup "$warmup" --threads 2 >"$work/peer.json"
    peer_times+=("$("$python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["step_time_s_median"])' "$work/peer.json")")
    peer_rss+=("$(cat "$work/rss")")
  done
  "$python" - "$preset" "$m" "$k" "$ours_eval" "$peer_eval" "${ours_times[*]}" "${peer_times[*]}" "${ours_rss[*]}" "${peer_rss[*]}" "$work/config.json" <<'PY'
import json, statistics, sys
preset, m, k, ours_eval, peer_eval, ours_t, peer_t, ours_rss, peer_rss, config = sys.argv[1:]
c = json.load(open(config))
tokens = int(m) * int(k) * c["train"]["seq_len"]
med = lambda s: statistics.median(float(v) for v in s.split())
ours, peer = tokens / med(ours_t), tokens / med(peer_t)
# Each round's pair ran back to back: the median of their ratios resists the machine's drift
# between rounds better than the ratio of medians does.
paired = statistics.median(float(p) / float(o) for o, p in zip(ours_t.split(), peer_t.split()))
print(json.dumps({"preset": preset, "m": int(m), "K": int(k), "tokens_per_step": tokens,
                  "init_loss_ours": json.loads(ours_eval)["loss"], "init_loss_peer": json.loads(peer_eval)["loss"],
                  "tokens_per_s_ours": round(ours), "tokens_per_s_peer": round(peer), "ratio": round(ours / peer, 2), "ratio_paired": round(paired, 2),
                  "peak_rss_mib_ours": round(med(ours_rss) / 1024), "peak_rss_mib_peer": round(med(peer_rss) / 1024)}))
PY
done
