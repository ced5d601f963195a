"""The E2E NLG challenge's official metrics (e2e-metrics): BLEU, NIST, METEOR, ROUGE_L, CIDEr.

The challenge's scorer (``measure_scores.py`` of tuetschek/e2e-metrics) runs NIST's Perl
``mteval-v13a`` for BLEU and NIST and the MS-COCO caption evaluator (pycocoevalcap, PTB tokenizer)
for METEOR, ROUGE_L and CIDEr. This module reproduces it offline, figure for figure:

- **grouping**: one instance per distinct MR of the reference file, in the order of the MR's first
  row; its references are *all* its rows, duplicates kept (the official scorer appends every row:
  116 references of the E2E test set repeat another of the same MR; dropping them changes NIST
  and CIDEr, for TGen's outputs to 8.6339 and 2.2133 instead of 8.6094 and 2.2338). The official scorer groups *consecutive* rows with the same MR; we group by identical MR
  wherever its rows are (the same on every E2E file, whose rows for one MR are contiguous).
- **BLEU**: ``sacrebleu`` ``BLEU(tokenize='13a', lowercase=True)`` (mteval-v13a's tokenization, case
  folded as mteval does without ``-c``), reference streams padded with ``None`` where an MR has
  fewer references than the largest group (the official scorer pads with empty segments).
- **NIST**: no package reproduces mteval (nltk's ``corpus_nist`` and e2e-metrics' own Python NIST
  do not), so :func:`nist` is written here from the NIST definition as mteval-v13a computes it,
  over the same lowercased 13a tokens.
- **METEOR, ROUGE_L, CIDEr**: pycocoevalcap 1.2 on text tokenized by its Stanford PTB tokenizer
  (``-preserveLines -lowerCase``, punctuation tokens removed), as ``COCOEvalCap.evaluate`` does,
  minus SPICE (not an E2E figure; it would need a CoreNLP download). METEOR runs through
  :class:`qgen.metrics.meteor.Meteor` (the same jar with pycocoevalcap's flags, corpus aggregate).
  These three need Java; without it :class:`~qgen.metrics.meteor.MetricUnavailableError` is raised.

Scale: every figure as e2e-metrics prints it (BLEU, METEOR, ROUGE_L in 0-1; NIST and CIDEr raw).
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qgen.metrics.meteor import Meteor, MetricUnavailableError, check_meteor_available

METRICS = ("BLEU", "NIST", "METEOR", "ROUGE_L", "CIDEr")
JAVA_METRICS = ("METEOR", "ROUGE_L", "CIDEr")
NIST_ORDER = 5  # mteval reports "NIST score" as the cumulative 5-gram score
TEST_REFS = Path("e2e") / "testset_w_refs.csv"  # under the datasets directory

# pycocoevalcap.tokenizer.ptbtokenizer.PUNCTUATIONS: tokens dropped after PTB tokenization
PTB_PUNCTUATIONS = frozenset(["''", "'", "``", "`", "-LRB-", "-RRB-", "-LCB-", "-RCB-",
                              ".", "?", "!", ",", ":", "-", "--", "...", ";"])


class E2EInputError(ValueError):
    """A reference or output file that cannot be scored; the message names the file and the problem."""


@dataclass(frozen=True)
class E2EReferences:
    """The distinct MRs of a reference file (first-row order) and each MR's references (all rows)."""

    path: Path
    mrs: tuple[str, ...]
    references: tuple[tuple[str, ...], ...]


# ---------------------------------------------------------------------------------------------
# Reading the files


def _strip_field(text: str) -> str:
    """Surrounding whitespace and one pair of surrounding double quotes removed (as e2e-metrics does)."""
    text = re.sub(r'^\s*"?\s*', "", text)
    return re.sub(r'\s*"?\s*$', "", text)


def _normalise_mr(mr: str) -> str:
    """An MR compared across files: quotes and surrounding blanks dropped, inner whitespace collapsed."""
    return " ".join(_strip_field(mr).split())


def read_references(path: str | Path) -> E2EReferences:
    """An E2E reference CSV (header naming ``mr`` and ``ref`` columns) grouped by MR.

    Raises :class:`E2EInputError` for a missing or unreadable file, a header without the two
    columns, a row with another number of fields than the header, or a row with an empty reference
    (an MR without a reference).
    """
    import csv

    path = Path(path)
    if not path.is_file():
        raise E2EInputError(not_a_file(path, "reference file"))
    groups: dict[str, list[str]] = {}
    try:
        with open(path, encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle)
            header = next(reader, None)
            if not header:
                raise E2EInputError(f"{path}: empty file, expected a header with 'mr' and 'ref' columns")
            columns = [c.strip().lower() for c in header]
            if "mr" not in columns or "ref" not in columns:
                raise E2EInputError(f"{path}: the header {header!r} lacks an 'mr' or a 'ref' column")
            mr_col, ref_col = columns.index("mr"), columns.index("ref")
            for row in reader:
                line = reader.line_num
                if not row or all(not cell.strip() for cell in row):
                    continue  # blank line
                if len(row) != len(header):
                    raise E2EInputError(f"{path}: line {line} has {len(row)} columns, the header has {len(header)}")
                mr, ref = row[mr_col].strip(), row[ref_col].strip()
                if not mr:
                    raise E2EInputError(f"{path}: line {line} has an empty MR")
                if not ref:
                    raise E2EInputError(f"{path}: line {line}: the MR {mr[:80]!r} has no reference (empty 'ref')")
                groups.setdefault(mr, []).append(ref)
    except UnicodeDecodeError as error:
        raise E2EInputError(f"{path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except csv.Error as error:
        raise E2EInputError(f"{path}: unreadable CSV ({error})") from None
    if not groups:
        raise E2EInputError(f"{path}: no reference rows")
    return E2EReferences(path, tuple(groups), tuple(tuple(refs) for refs in groups.values()))


def read_outputs(path: str | Path, references: E2EReferences | None = None) -> list[str]:
    """System outputs from a TSV of two columns, ``MR<TAB>output`` (header ``MR	output`` optional).

    The lines are split at the tab, not parsed as quoted CSV: tgen.tsv quotes its MRs and zhang.tsv
    does not, and an output may hold a lone ``"``; one pair of surrounding quotes is removed from
    each field, as e2e-metrics does. With ``references``, the file must hold exactly one output per
    distinct MR, in the references' MR order: the MR column is checked line by line (quotes and
    whitespace runs ignored), so outputs cannot be scored against another MR's references.
    """
    path = Path(path)
    text = read_outputs_text(path, E2EInputError)
    rows: list[tuple[int, str, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = line.split("\t")
        if len(fields) != 2:
            raise E2EInputError(f"{path}: line {number} has {len(fields)} tab-separated columns, expected 2 (MR, output)")
        if not rows and re.match(r'^\s*"?mr"?\s*$', fields[0], re.I):
            continue  # the header
        rows.append((number, _strip_field(fields[0]), _strip_field(fields[1])))
    if not rows:
        raise E2EInputError(f"{path}: no outputs")
    if references is not None:
        if len(rows) != len(references.mrs):
            number, first, _ = rows[0]
            header = (len(rows) == len(references.mrs) + 1 and _normalise_mr(first) != _normalise_mr(references.mrs[0])
                      and "[" not in first)  # one too many, and line 1 is no MR: a header named otherwise
            raise E2EInputError(
                f"{path}: {len(rows)} outputs but {len(references.mrs)} distinct MRs in {references.path.name}: "
                "one output per distinct MR, in the reference file's order"
                + (f" (line {number}, {first[:40]!r}, is no MR: a header line is read as one only when its first "
                   "column is 'MR')" if header else "")
            )
        for (number, mr, _), expected in zip(rows, references.mrs):
            if _normalise_mr(mr) != _normalise_mr(expected):
                raise E2EInputError(
                    f"{path}: line {number} is for the MR {mr[:80]!r}, but the reference file's MR at that position "
                    f"is {expected[:80]!r}: outputs must follow the reference file's MR order"
                )
    return [output for _, _, output in rows]


def default_references(datasets: str | Path | None = None) -> Path:
    """``<datasets>/e2e/testset_w_refs.csv`` (datasets: the argument, ``$QGEN_DATASETS`` or ../shared/datasets)."""
    from qgen.datasets.paths import ENV_VAR, datasets_dir

    root = datasets_dir(datasets)
    if root is None:
        raise E2EInputError(
            f"no datasets directory: pass --refs, or point ${ENV_VAR} at the folder holding {TEST_REFS}"
        )
    return root / TEST_REFS


# ---------------------------------------------------------------------------------------------
# BLEU and NIST (mteval-v13a)


def tokenize_13a(text: str) -> list[str]:
    """mteval-v13a's tokenization of lowercased text (sacrebleu's ``13a``), as a token list."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    return Tokenizer13a()(text.lower()).split()


def reference_streams(references: Sequence[Sequence[str]]) -> list[list[str | None]]:
    """Reference groups transposed to streams (stream k = every MR's k-th reference), padded with None."""
    width = max(len(group) for group in references)
    return [[group[k] if k < len(group) else None for group in references] for k in range(width)]


def bleu(outputs: Sequence[str], references: Sequence[Sequence[str]]) -> float:
    """Corpus BLEU-4 in 0-1 as mteval-v13a computes it (case-insensitive, 13a tokens)."""
    from sacrebleu.metrics import BLEU

    check_corpus(outputs, references)
    # force=True only silences sacrebleu's "tokenized period" warning on stderr; the score is the same.
    scorer = BLEU(tokenize="13a", lowercase=True, force=True)
    return scorer.corpus_score(list(outputs), reference_streams(references)).score / 100.0


def _ngrams(tokens: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1))


def nist_information(references: Sequence[Sequence[Sequence[str]]], order: int = NIST_ORDER) -> dict[tuple[str, ...], float]:
    """NIST information weights from the reference corpus (every reference of every segment).

    ``info(w1..wn) = log2(count(w1..wn-1) / count(w1..wn))``, the prefix count of a unigram being the
    total number of reference words; counts are all occurrences in the references (mteval-v13a
    ``compute_ngram_info``).
    """
    counts: Counter[tuple[str, ...]] = Counter()
    total_words = 0
    for group in references:
        for ref in group:
            total_words += len(ref)
            for n in range(1, order + 1):
                counts.update(_ngrams(ref, n))
    info = {}
    for ngram, count in counts.items():
        prefix_count = counts[ngram[:-1]] if len(ngram) > 1 else total_words
        info[ngram] = math.log2(prefix_count / count)
    return info


def nist_length_penalty(ratio: float) -> float:
    """NIST's brevity factor: exp(-beta ln^2(ratio)) below ratio 1, beta making it 0.5 at ratio 2/3."""
    if ratio >= 1.0:
        return 1.0
    if ratio <= 0.0:
        return 0.0
    beta = -math.log(0.5) / math.log(1.5) ** 2
    return math.exp(-beta * math.log(ratio) ** 2)


def nist_tokens(
    outputs: Sequence[Sequence[str]], references: Sequence[Sequence[Sequence[str]]], order: int = NIST_ORDER
) -> float:
    """Corpus NIST-``order`` of tokenized outputs against tokenized reference groups (mteval-v13a).

    Per n: the information of the output's n-grams that match a reference (each clipped to its
    largest count in one reference of its segment), summed over the corpus, divided by the number
    of output n-grams; the sum over n = 1..order times the length penalty.

    Reference length (the length penalty's denominator): the average length of a reference over
    *every* reference of the corpus, times the number of segments, i.e. NIST's "average number of
    words in a reference translation, averaged over all reference translations". This is what the
    official figures need: on the E2E test set it gives 8.6094 (TGen) and 8.1840 (Zhang et al.),
    where the mean per segment of each segment's average reference length (e2e-metrics' own Python
    NIST) gives 8.5923 / 8.0041, and total reference words over the number of padded reference
    streams gives no penalty at all (8.6095 / 8.7169).
    """
    check_corpus(outputs, references)
    info = nist_information(references, order)
    matched_info = [0.0] * (order + 1)
    output_ngrams = [0] * (order + 1)
    reference_words = 0
    reference_count = 0
    for output, group in zip(outputs, references):
        reference_words += sum(len(ref) for ref in group)
        reference_count += len(group)
        for n in range(1, order + 1):
            hyp = _ngrams(output, n)
            output_ngrams[n] += max(len(output) - n + 1, 0)
            most: dict[tuple[str, ...], int] = {}
            for ref in group:
                for ngram, count in _ngrams(ref, n).items():
                    if count > most.get(ngram, 0):
                        most[ngram] = count
            for ngram, count in hyp.items():
                if ngram in most:
                    matched_info[n] += info[ngram] * min(count, most[ngram])
    score = sum(matched_info[n] / max(output_ngrams[n], 1) for n in range(1, order + 1))
    reference_length = reference_words / reference_count * len(outputs)
    ratio = output_ngrams[1] / reference_length if reference_words else 0.0
    return score * nist_length_penalty(ratio)


def nist(outputs: Sequence[str], references: Sequence[Sequence[str]], order: int = NIST_ORDER) -> float:
    """Corpus NIST-5 of output strings against reference strings, over lowercased 13a tokens."""
    check_corpus(outputs, references)
    return nist_tokens([tokenize_13a(o) for o in outputs],
                       [[tokenize_13a(r) for r in group] for group in references], order)


# ---------------------------------------------------------------------------------------------
# METEOR, ROUGE_L, CIDEr (pycocoevalcap 1.2 with its PTB tokenizer)


def ptb_tokenize(texts: Sequence[str], java: str | None = None) -> list[str]:
    """pycocoevalcap's PTBTokenizer on a list of texts: lowercased PTB tokens, punctuation removed.

    The same jar and flags as ``pycocoevalcap.tokenizer.PTBTokenizer`` (stanford-corenlp-3.4.1,
    ``-preserveLines -lowerCase``); the input file goes to a temporary directory instead of the
    installed package's folder (which may be read-only), the result is the same.
    """
    import pycocoevalcap

    executable = check_meteor_available(java)
    jar = Path(next(iter(pycocoevalcap.__path__))) / "tokenizer" / "stanford-corenlp-3.4.1.jar"
    if not jar.is_file():
        raise MetricUnavailableError(f"PTB tokenizer jar not found at {jar} (reinstall pycocoevalcap==1.2)")
    if not texts:
        return []
    with tempfile.TemporaryDirectory(prefix="qgen-ptb-") as tmp:
        source = os.path.join(tmp, "sentences.txt")
        with open(source, "w", encoding="utf-8") as handle:
            handle.write("\n".join(t.replace("\n", " ") for t in texts))
        command = [executable, "-Dfile.encoding=UTF-8", "-cp", str(jar),
                   "edu.stanford.nlp.process.PTBTokenizer", "-preserveLines", "-lowerCase", source]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False, timeout=600)
    if done.returncode != 0:
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["(no stderr)"]
        raise RuntimeError(f"PTB tokenizer failed (exit {done.returncode}): {tail[0]}")
    lines = done.stdout.decode("utf-8").split("\n")
    if len(lines) < len(texts):
        raise RuntimeError(f"PTB tokenizer returned {len(lines)} lines for {len(texts)} texts")
    return [" ".join(w for w in line.rstrip().split(" ") if w not in PTB_PUNCTUATIONS) for line in lines[: len(texts)]]


def coco_scores(outputs: Sequence[str], references: Sequence[Sequence[str]], java: str | None = None) -> dict[str, float]:
    """METEOR, ROUGE_L and CIDEr as pycocoevalcap's ``COCOEvalCap`` computes them (0-1 / raw CIDEr)."""
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    check_corpus(outputs, references)
    check_meteor_available(java)
    # Two tokenizer runs, references then outputs, as COCOEvalCap does.
    flat = ptb_tokenize([r for group in references for r in group], java)
    gts: dict[str, list[str]] = {}
    position = 0
    for index, group in enumerate(references):
        gts[f"inst-{index}"] = flat[position : position + len(group)]
        position += len(group)
    res = {f"inst-{index}": [line] for index, line in enumerate(ptb_tokenize(list(outputs), java))}
    with Meteor(java=java) as meteor:
        keys = list(gts)
        result = meteor.score([res[k][0].split() for k in keys], [[r.split() for r in gts[k]] for k in keys])
    rouge, _ = Rouge().compute_score(gts, res)
    cider, _ = Cider().compute_score(gts, res)
    return {"METEOR": result.corpus / 100.0, "ROUGE_L": float(rouge), "CIDEr": float(cider)}


# ---------------------------------------------------------------------------------------------
# All five


def not_a_file(path: Path, what: str) -> str:
    """Why ``path`` cannot be read as the ``what`` (e.g. "outputs file"): it is a folder, or it is missing."""
    article = "an" if what[0] in "aeiou" else "a"
    return f"{path}: " + (f"a folder, not {article} {what}" if path.is_dir() else f"{what} not found")


def read_outputs_text(path: Path, error: type[ValueError]) -> str:
    """A system-outputs file's text (UTF-8, a BOM dropped); ``error`` names the file and the problem."""
    if not path.is_file():
        raise error(not_a_file(path, "outputs file"))
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise error(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None


def check_corpus(outputs: Sequence[object], references: Sequence[Sequence[object]], unit: str = "instance") -> None:
    """One reference group (at least one reference) per output, and at least one output (``unit``
    names an output in the message: an E2E instance, a Wen test record)."""
    if len(outputs) != len(references):
        raise ValueError(f"{len(outputs)} outputs but {len(references)} reference groups")
    if not outputs:
        raise ValueError("empty corpus: nothing to score")
    for index, group in enumerate(references):
        if len(group) == 0:
            raise ValueError(f"{unit} {index} has no reference")


def score(
    outputs: Sequence[str], references: Sequence[Sequence[str]], *, java_metrics: bool = True, java: str | None = None
) -> dict[str, float | None]:
    """The five E2E figures of ``outputs`` (one per instance) against reference groups.

    ``java_metrics=False`` skips METEOR, ROUGE_L and CIDEr (None), which need Java.
    """
    check_corpus(outputs, references)
    figures: dict[str, float | None] = {"BLEU": bleu(outputs, references), "NIST": nist(outputs, references)}
    coco = coco_scores(outputs, references, java) if java_metrics else dict.fromkeys(JAVA_METRICS)
    figures.update(coco)
    return {name: figures[name] for name in METRICS}


def score_files(
    outputs_path: str | Path, refs_path: str | Path | None = None, *, java_metrics: bool = True,
    java: str | None = None, datasets: str | Path | None = None,
) -> dict[str, float | None]:
    """Score an outputs TSV against a reference CSV (default: the E2E test set under the datasets dir)."""
    refs = read_references(refs_path if refs_path is not None else default_references(datasets))
    outputs = read_outputs(outputs_path, refs)
    return score(outputs, refs.references, java_metrics=java_metrics, java=java)
