"""Zhang et al.'s E2E rows at full size on one CUDA GPU within a wall-clock window.

    python3 out/gpu/zhang.py train ROW SEED     # one (row, seed) run, dev BLEU selection per epoch
    python3 out/gpu/zhang.py report OUTDIR      # rows whose seeds all have a scored epoch: dev + test ensemble

The six (row, seed) runs were started side by side and stopped after 380 s.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from qgen.e2e_benchmark import ROWS, E2EBenchConfig, run_e2e_benchmark  # noqa: E402
from qgen.dev_selection import STATE  # noqa: E402

import os  # noqa: E402

WORK, DATA = Path("out/e2e-work"), "out/gpu/datasets"
SMOKE = dict(hidden=32, embedding=16) if os.environ.get("ZHANG_SMOKE") else {}
EPOCHS = int(os.environ.get("ZHANG_EPOCHS", "5"))

if sys.argv[1] == "train":
    row, seed = sys.argv[2], int(sys.argv[3])
    run_e2e_benchmark([row], E2EBenchConfig(epochs=EPOCHS, seeds=(seed,), java_metrics=False, **SMOKE), WORK,
                      Path("out/e2e-single") / f"{row}_{seed}", DATA)
else:
    out = Path(sys.argv[2])
    out.mkdir(parents=True, exist_ok=True)
    scored = {}
    for row in ROWS:
        for seed in (1, 2):
            state = WORK / f"{row}_seed{seed}" / STATE
            scored[f"{row}_seed{seed}"] = json.loads(state.read_text())["history"] if state.exists() else []
    print(json.dumps({k: [(e["epoch"], round(e["dev_score"], 4)) for e in v] for k, v in scored.items()}))
    (out / "histories.json").write_text(json.dumps(scored, indent=2))
    rows = [r for r in ROWS if r in os.environ.get('ZHANG_ROWS', ','.join(ROWS)).split(',')
             if all(scored[f"{r}_seed{s}"] for s in (1, 2))]
    done = min(len(scored[f"{r}_seed{s}"]) for r in rows for s in (1, 2))
    print("report rows", rows, "epochs", done)
    run_e2e_benchmark(rows, E2EBenchConfig(epochs=done, seeds=(1, 2), java_metrics=False, **SMOKE), WORK, out, DATA,
                      log=print)
