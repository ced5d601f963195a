"""The main job on the bundled demo data (``data/demo``).

For now the pipeline ends at preprocessing: the demo tokenizes ``data/demo/sample.jsonl`` into
Parquet and shows a few examples and rejects. Later stages (training, synthesis) extend it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

DEMO_DIR = Path(__file__).resolve().parent.parent / "data" / "demo"


def run_demo(out: str | Path, demo_dir: Path = DEMO_DIR, workers: int | None = None) -> Iterator[str]:
    """Preprocess the demo sample into ``<out>/preprocessed``; yield lines to print."""
    import pyarrow.parquet as pq

    from qgen.preprocess import preprocess_dataset

    sample = demo_dir / "sample.jsonl"
    if not sample.is_file():
        raise FileNotFoundError(f"demo data not found at {sample} (run from a qgen checkout)")
    target = Path(out) / "preprocessed"
    report = preprocess_dataset(str(sample), target, workers=workers)
    yield report.summary()
    examples = pq.read_table(target / "train.parquet").to_pylist()
    for row in examples[:3]:
        yield f"  example {row['id']}: {' '.join(row['lf_tokens'])}  ->  {' '.join(row['question_tokens'])}"
    for row in pq.read_table(target / "rejects.parquet").to_pylist():
        yield f"  reject  {row['id']} [{row['stage']}]: {row['error']}"
    for path in report.files:
        yield f"wrote {Path(path).resolve()}"
