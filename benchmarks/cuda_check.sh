#!/bin/bash
# On a machine with a CUDA GPU: the tests that need one (captured training and decoding, token
# budgets), then the training throughput of Copynet and Copy + Scratchpad with the captured step
# beside the eager one (benchmarks/results/throughput-cuda.json, captured_over_eager).
#
#   bash benchmarks/cuda_check.sh [--models copynet,scratchpad] [--steps 20]
#
# Run from the repository root with qgen's dependencies importable (PYTHONPATH=. works); a failure
# of the tests stops it before the figures.
set -euo pipefail
python -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device')"
python -m pytest -q -p no:cacheprovider tests/qgen/test_captured_training.py tests/qgen/decode/test_cuda_graphs.py \
  tests/qgen/test_batching.py
QGEN_CUDA_GRAPHS=on python benchmarks/train_throughput.py --models copynet,scratchpad --steps 20 "$@"
