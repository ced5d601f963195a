"""The question generator: one encoder-decoder skeleton with pluggable parts (see ../shared/DESIGN.md)."""
from qgen.model.batch import Batch, make_batch
from qgen.model.config import BENCHMARK_MODELS, VARIANTS, ModelConfig, Variant
from qgen.model.seq2seq import QuestionGenerator, build_model
from qgen.model.vocab import Vocab

__all__ = ["BENCHMARK_MODELS", "Batch", "ModelConfig", "QuestionGenerator", "VARIANTS", "Variant", "Vocab",
           "build_model", "make_batch"]
