#!/usr/bin/env bash
# One lease of the GPU machine (the `device` tool) for the results tables, in calls of at most 10 minutes.
#
#   bash benchmarks/gpu_lease.sh start    # first call: throughput alone, then the long runs in the background
#   bash benchmarks/gpu_lease.sh watch S  # later calls: wait S seconds, print progress, return what is done
#
# Why a background run: a call may last 10 minutes, a run longer. Processes started with setsid outlive
# the call and keep running while the machine stays warm (the next call must come within 30 s), and
# checkpoints never come back ($OUT takes 16 MiB a file), so a run must end on the machine that began it.
#
# Needs, carried: .carry/prep/{webqsp,wikisql} (this checkout's out/benchmarks/prep: the GPU image has no
# rdflib or sqlglot to preprocess) and .whl/ (nltk and rouge-score wheels: the image lacks them).
# QGEN_COMMIT names the commit in the results where the copy there has no git. Tunables (environment):
# WIKISQL_MODELS, WEBQSP_MODELS, WEBQSP_SEED, MAX_SECONDS (per WikiSQL model: no new epoch after it),
# WEBQSP_MAX_SECONDS (default none: the WebQSP runs train all 75 epochs).
#
# Plan the lease (30 minutes of device time a session, the start included): the first lease (2026-11-22)
# ran `start 90`, then `watch 520` and a last `watch` until both archives were there, with
# MAX_SECONDS=1200: 12-18 WikiSQL epochs and 75 WebQSP epochs with seven runs sharing the GPU (91-97%
# busy). Call the next `watch` at once: 30 s after a call the machine, and every checkpoint, is gone.
# To stop one run early, match its command line so that the pattern cannot match your own shell:
# pkill -f '[q]gen_bench.py --dataset webqsp --models scratchpad --epochs'.
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?run this through the device tool: \$OUT is where files come back}"
export PYTHONPATH=/tmp/site:. PYTHONUNBUFFERED=1
WIKISQL_MODELS=${WIKISQL_MODELS:-scratchpad,coverage,copynet,seq2seq}
WEBQSP_MODELS=${WEBQSP_MODELS:-scratchpad,coverage,copynet}
WEBQSP_SEED=${WEBQSP_SEED:-3}
MAX_SECONDS=${MAX_SECONDS:-1200}
WEBQSP_MAX_SECONDS=${WEBQSP_MAX_SECONDS:-}
LOGS=out/lease

report() {  # progress so far, and every finished archive and log into $OUT
    nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv,noheader
    for log in out/benchmarks/logs/*.log; do echo "$log: $(grep -c '^epoch' "$log") epochs; $(tail -n 1 "$log")"; done
    cp $LOGS/*.tar.gz "$OUT"/ 2>/dev/null
    tar -czf "$OUT/logs.tar.gz" out/benchmarks/logs $LOGS/*.log $LOGS/*.json 2>/dev/null
    true
}

case "${1:-}" in
start)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl || exit 1
    mkdir -p out/benchmarks $LOGS && cp -r .carry/prep out/benchmarks/ || exit 1
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c 'import torch; print("torch", torch.__version__, torch.cuda.get_device_name())'
    # Throughput of every model alone on the GPU first (it also proves the GPU path before the long runs).
    python3 benchmarks/train_throughput.py --steps 10 --threads 2 || exit 1
    cp benchmarks/results/throughput-cuda.json $LOGS/  # the next call's copy of the tree removes it there
    for dataset in wikisql webqsp; do
        if [ $dataset = wikisql ]; then models=$WIKISQL_MODELS; extra=(--max-seconds "$MAX_SECONDS")
        else models=$WEBQSP_MODELS; extra=(--seed "$WEBQSP_SEED" ${WEBQSP_MAX_SECONDS:+--max-seconds "$WEBQSP_MAX_SECONDS"}); fi
        setsid nohup python3 benchmarks/qgen_bench.py --dataset $dataset --models "$models" --parallel --threads 2 \
            "${extra[@]}" --results out/results --archive $LOGS/$dataset.tar.gz \
            >$LOGS/$dataset.log 2>&1 </dev/null &
    done
    sleep "${2:-60}"
    report
    ;;
watch)
    sleep "${2:-540}"
    report
    ;;
*)
    echo "usage: $0 start [seconds] | watch [seconds]" >&2
    exit 2
    ;;
esac
