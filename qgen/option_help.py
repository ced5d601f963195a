"""Help texts of options that both the ``qgen`` CLI (typer) and ``benchmarks/qgen_bench.py`` (argparse) take.

Kept here, free of imports, so the two say the same thing and the CLI still starts without torch.
"""
TEACHER_FORCING = "Probability that the next decoder input is the gold word (the paper: 0.5)."
# The benchmark keeps each teacher-forcing setting's checkpoints apart.
TEACHER_FORCING_BENCHMARK = (TEACHER_FORCING[:-1] + "; another value than 0.5 per step trains into folders "
                             "suffixed _tf<value>[seq].")
BEAM = "Beam size (1-64; the paper: 4)."
TEACHER_FORCING_PER = "Toss the teacher-forcing coin per step (default) or once per question: step or sequence."
NO_REPEAT = "Never decode a word right after itself ('new york york' cannot come out; nor can 'walla walla')."
CANDIDATES = ("Try the beam's N best questions (N <= --beam; default: the whole beam) against the faithfulness "
              "audit and write the first that passes (values, comparison direction, aggregate stated) and that "
              "the over-copy filter keeps, else the first that passes, else the best; with a round-trip parser, the first of up to three passing ones (not over-copied) that it also "
              "parses back; 1: the beam's best.")
SAMPLING = ("Draw the --candidates questions from the model at this temperature (e.g. 0.7) instead of taking "
            "the beam's best: more varied questions, for a corpus that trains a parser; 0: beam search.")
NO_REPEAT_BENCHMARK = (NO_REPEAT + " The results go to <model>_norepeat; with --max-seconds 0 the trained "
                       "checkpoint is only decoded again (else training goes on first).")
BENCHMARK_SEED = ("Initialisation, batch order, dropout masks and teacher-forcing draws (the validation split "
                  "stays fixed); another seed than 1 trains into folders suffixed _seed<N>.")

DEVICE = "auto (a CUDA GPU when torch sees one, else the CPU), cpu, cuda or cuda:N."
QUIET = "No progress bar and no log lines: only the command's results (and errors) are printed."
MODEL = ("The question generator: a checkpoint (best.pt), an exported model folder, or default (the model that "
         "ships with qgen, used when none is named).")
FORMAT = ("The input file's format: auto (by its name: .jsonl, .parquet, .json for LC-QuAD/QALD, else text, one "
          "logical form a line), jsonl, parquet, text, or a public dataset's: webqsp, wikisql, lcquad1, lcquad2, "
          "lcquad2_dbpedia, qald, sparql-json (with --json-fields).")
JSON_FIELDS = ("With --format sparql-json: where each record's fields are, id=FIELD,question=FIELD,sparql=FIELD"
               "[,records=KEY][,answers=FIELD] (dotted paths, e.g. sparql=query.sparql).")
