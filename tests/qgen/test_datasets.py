"""Dataset loaders: each on its fixtures (tests/fixtures/datasets), malformed input, and the real data."""
from __future__ import annotations

import json
import lzma
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pytest

from qgen.datasets import cwq, e2e, paths, sparql_json, webqsp, wen
from qgen.datasets.paths import SplitError
from qgen.datasets.records import RawExample
from qgen.datasets.registry import DATASETS, load_dataset

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "datasets"


def _wikisql():
    """The WikiSQL loader, or a skip if its SQL renderer (parsers.sql.wikisql) is not importable."""
    try:
        from qgen.datasets import wikisql
    except ImportError as exc:
        pytest.skip(f"WikiSQL loader needs parsers.sql.wikisql.render_wikisql: {exc}")
    return wikisql


def _by_id(examples) -> dict[str, RawExample]:
    items = list(examples)
    assert len({e.id for e in items}) == len(items), "ids must be unique"
    return {e.id: e for e in items}


# ---------------------------------------------------------------- paths


def test_datasets_dir_explicit_env_default(monkeypatch, tmp_path):
    assert paths.datasets_dir(tmp_path) == tmp_path
    monkeypatch.setenv(paths.ENV_VAR, str(tmp_path / "env"))
    assert paths.datasets_dir() == tmp_path / "env"
    monkeypatch.delenv(paths.ENV_VAR)
    found = paths.datasets_dir()
    assert found is None or found.name == "datasets"


# ---------------------------------------------------------------- WebQSP


def test_webqsp_fixture_parses_names_answers():
    train = _by_id(webqsp.load(FIXTURES / "webqsp", "train"))  # the .json.xz file
    assert list(train) == ["WebQTrn-9001.P0", "WebQTrn-9010.P0", "WebQTrn-9010.P1", "WebQTrn-9020.P0",
                           "WebQTrn-9030.P0", "WebQTrn-9040.P0"]
    first = train["WebQTrn-9001.P0"]
    assert (first.split, first.lf_type, first.source) == ("train", "sparql", "webqsp")
    assert first.question == "what is the name of mara quillfeather sister?"
    assert first.names == {"m.0qx7a1": "Mara Quillfeather", "m.0qx7f2": "Female"}  # topic + constraint
    assert first.answers == ["Lenna Quillfeather"]
    assert json.loads(first.raw)["Parses"][0]["ParseId"] == "WebQTrn-9001.P0"
    manual = train["WebQTrn-9020.P0"].logical_form
    assert manual.startswith("#MANUAL SPARQL") and "# Orsolya Brandt" in manual  # kept as is
    assert train["WebQTrn-9020.P0"].answers == []  # a parse with no answers
    no_topic = train["WebQTrn-9030.P0"]
    assert no_topic.load_error is None and no_topic.names == {}  # null TopicEntityMid: just no topic name
    assert train["WebQTrn-9040.P0"].answers == ["1987-04-11"]  # a Value answer: null EntityName
    assert all(e.load_error is None for e in train.values())
    test = _by_id(webqsp.load(FIXTURES / "webqsp", "test"))  # the plain .json file
    assert set(test) == {"WebQTest-9001.P0", "WebQTest-9001.P1", "WebQTest-9010.P0"}


def test_webqsp_partial_null_sparql_is_a_load_error():
    examples = list(webqsp.load_partial(FIXTURES / "webqsp"))
    errors = [e for e in examples if e.load_error]
    assert [e.load_error for e in errors] == ["no SPARQL parse (partial annotation)"] * 2
    assert errors[0].names == {"m.0qx7t2": "Tamsin Arkwright"} and errors[0].logical_form == ""
    complete = [e for e in examples if not e.load_error]
    assert len(complete) == 1 and complete[0].logical_form.startswith("PREFIX")


def test_webqsp_malformed_never_raises(tmp_path):
    (tmp_path / "WebQSP.train.json").write_text("{not json", encoding="utf-8")
    bad = {"Questions": [{"QuestionId": "Q1", "RawQuestion": "q?"},
                         {"QuestionId": "Q2", "Parses": ["nonsense", {"ParseId": "Q2.P1", "Sparql": None}]}]}
    (tmp_path / "WebQSP.test.json").write_text(json.dumps(bad), encoding="utf-8")
    [broken] = webqsp.load(tmp_path, "train")
    assert broken.load_error.startswith("malformed WebQSP file") and broken.raw == "{not json"
    examples = _by_id(webqsp.load(tmp_path, "test"))
    assert examples["Q1"].load_error == "question has no list of Parses"
    assert "not an object" in examples["Q2.P0"].load_error
    assert examples["Q2.P1"].load_error == "no SPARQL parse"


def test_webqsp_bad_split_and_missing_files(tmp_path):
    with pytest.raises(SplitError, match="give --split train or test"):
        list(webqsp.load(FIXTURES / "webqsp", "dev"))
    with pytest.raises(FileNotFoundError, match="WebQSP train"):
        list(webqsp.load(tmp_path))


# ---------------------------------------------------------------- CWQ


def test_cwq_names_from_webqsp_and_leakage_id_in_raw():
    names = cwq.webqsp_names(FIXTURES / "webqsp")
    assert names["WebQTrn-9001"] == {"m.0qx7a1": "Mara Quillfeather", "m.0qx7f2": "Female"}
    assert names["WebQTrn-9002"] == {"m.0qx7t2": "Tamsin Arkwright"}  # partial file: no SPARQL, a topic name
    examples = list(cwq.load(FIXTURES / "cwq", webqsp_names=names))
    assert [e.split for e in examples] == ["test"] * 3
    first = examples[0]
    assert first.id.startswith("WebQTest-9010_") and first.answers == ["m.0qx7d3"]
    assert first.names == names["WebQTest-9010"] == {"m.0qx7d2": "Dunmore Otters"}
    assert json.loads(first.raw)["webqsp_ID"] == "WebQTest-9010"
    assert examples[1].names == names["WebQTrn-9010"] and len(examples[1].answers) == 3  # a train seed
    assert examples[2].names == {}  # its seed is not in the fixture
    assert all(not e.names for e in cwq.load(FIXTURES / "cwq"))


def test_cwq_malformed_records(tmp_path):
    records = [{"ID": "a", "question": "q", "sparql": "", "webqsp_ID": "x", "answer": []}, 7,
               {"ID": "a", "question": "q", "sparql": "SELECT * {}", "answer": ["m.1"]}]
    (tmp_path / "ComplexWebQuestions_test.json").write_text(json.dumps(records))
    examples = list(cwq.load(tmp_path))
    assert [e.load_error for e in examples] == ["no SPARQL in the record", "record is a int, not an object", None]
    assert len({e.id for e in examples}) == 3  # the repeated ID is made unique


# ---------------------------------------------------------------- WikiSQL


def test_wikisql_shared_layout_renders_sql():
    wikisql = _wikisql()
    dev = _by_id(wikisql.load(FIXTURES / "wikisql", "dev"))
    assert list(dev) == ["dev-0", "dev-1", "dev-2", "dev-3"]  # the trailing blank line is no record
    count = dev["dev-1"]
    assert count.question == "How many clubs did runner with bib 7 compete for?"
    assert count.lf_type == "sql" and "COUNT" in count.logical_form and "Club/Academy" in count.logical_form
    assert wikisql.table_id(count) == "1-90000001-1"
    test = list(wikisql.load(FIXTURES / "wikisql", "test"))
    assert len(test) == 19 and all(e.load_error is None for e in test)
    assert "WHERE" not in test[-1].logical_form  # the record without conditions
    assert wikisql.available_splits(FIXTURES / "wikisql") == ["dev", "test"]


def test_wikisql_official_layout():
    wikisql = _wikisql()
    examples = list(wikisql.load(FIXTURES / "wikisql_official"))
    assert [e.id for e in examples] == ["train-0", "train-1", "train-2"]
    assert all(e.load_error is None and e.logical_form.startswith("SELECT") for e in examples)


def test_wikisql_malformed_lines(tmp_path):
    wikisql = _wikisql()
    lines = [
        "{not json",
        json.dumps({"table_id": "1-2-3", "question": "q", "sql": {"sel": 0, "agg": 0, "conds": []}}),
        json.dumps({"table_id": "1-0-0", "question": "q", "sql": {"sel": 9, "agg": 0, "conds": []}}),
        json.dumps({"table_id": "1-0-0", "question": "q", "sql": {"sel": 0, "agg": 0, "conds": []}}),
        json.dumps(["a list"]),
    ]
    (tmp_path / "dev.jsonl").write_text("\n".join(lines) + "\n")
    (tmp_path / "tables_columns.json").write_text(json.dumps({"table_1_0_0": ["A", "B"]}))
    examples = _by_id(wikisql.load(tmp_path))
    assert examples["dev-0"].load_error.startswith("line is not JSON")
    assert "has no header" in examples["dev-1"].load_error
    assert examples["dev-2"].load_error.startswith("StructuredLogicalFormError")
    assert examples["dev-3"].load_error is None and examples["dev-3"].logical_form
    assert "not an object" in examples["dev-4"].load_error
    assert examples["dev-2"].raw == lines[2]


def test_wikisql_table_disjoint_split():
    wikisql = _wikisql()
    examples = list(wikisql.load(FIXTURES / "wikisql", "test"))
    train, valid = wikisql.table_disjoint_split(examples, fraction=0.3, seed=1)
    assert valid and train and len(train) + len(valid) == len(examples)
    assert not {wikisql.table_id(e) for e in train} & {wikisql.table_id(e) for e in valid}
    assert len(valid) >= 0.3 * len(examples)
    assert wikisql.table_disjoint_split(examples, fraction=0.3, seed=1) == (train, valid)
    assert wikisql.table_disjoint_split(examples, fraction=0.0) == (examples, [])


# ---------------------------------------------------------------- E2E / E2E+


def test_e2e_fixture_splits_and_quoted_header():
    examples = _by_id(e2e.load(FIXTURES / "e2e"))
    assert Counter(e.split for e in examples.values()) == {"train": 4, "dev": 3, "test": 3}
    first = examples["train-0"]
    assert first.logical_form.startswith("name[The Copper Kettle], eatType[pub], priceRange[more than £30]")
    assert first.question.startswith("The Copper Kettle pub near Café Lumière")  # an unquoted UTF-8 ref
    assert json.loads(first.raw)["mr"] == first.logical_form
    assert examples["test-0"].logical_form.startswith("name[Saffron Dock]")  # header "mr","ref"
    plus = _by_id(e2e.load_plus(FIXTURES / "e2e_plus"))
    assert Counter(e.split for e in plus.values()) == {"dev": 3, "test": 2}
    assert {e.source for e in plus.values()} == {"e2e_plus"}
    assert "Sant' Elmo" in plus["dev-0"].logical_form
    with pytest.raises(ValueError, match="e2e_plus has no split 'train'"):
        list(e2e.load_plus(FIXTURES / "e2e_plus", "train"))


def test_e2e_malformed_rows(tmp_path):
    (tmp_path / "devset.csv").write_text('MR,ref\n"a[b]",ok\nonly-one-field\n"",empty\n"x[y]",a,b\n', encoding="utf-8")
    rows = list(e2e.load(tmp_path, "dev"))
    assert [r.load_error for r in rows] == [None, "row has 1 fields, expected 2", "empty MR",
                                            "row has 3 fields, expected 2"]
    (tmp_path / "testset_w_refs.csv").write_text("text,ref\nx,y\n", encoding="utf-8")
    [bad] = e2e.load(tmp_path, "test")
    assert "no 'mr' column" in bad.load_error


# ---------------------------------------------------------------- Wen et al. 2015


def test_wen_fixture_records():
    hotel = _by_id(wen.load_hotel(FIXTURES / "wen2015_sf"))
    assert Counter(e.split for e in hotel.values()) == {"train": 3, "dev": 3, "test": 3}
    first = hotel["train-0"]
    assert (first.lf_type, first.source) == ("da", "wen2015_hotel")
    record = json.loads(first.raw)
    assert record[0] == first.logical_form and record[1] == first.question and len(record) == 3
    restaurant = list(wen.load(FIXTURES / "wen2015_sf" / "restaurant", "valid", domain="restaurant"))
    assert [e.split for e in restaurant] == ["dev"] * 3 and restaurant[0].source == "wen2015_restaurant"
    both = list(wen.load(FIXTURES / "wen2015_sf", "train"))
    assert Counter(e.source for e in both) == {"wen2015_hotel": 3, "wen2015_restaurant": 4}
    with pytest.raises(ValueError, match="unknown Wen domain"):
        list(wen.load(FIXTURES / "wen2015_sf", domain="laptop"))


def test_wen_malformed(tmp_path):
    folder = tmp_path / "hotel"
    folder.mkdir()
    banner = "#\n" * 5
    (folder / "train.json").write_text(banner + json.dumps([["inform(a=b)", "text", "base"], "junk", ["", "t", "b"]]))
    (folder / "valid.json").write_text("[]")
    (folder / "test.json").write_text(banner + "[1, 2")
    examples = _by_id(wen.load_hotel(tmp_path))
    assert examples["train-0"].load_error is None
    assert examples["train-1"].load_error == "record is not a list [DA, utterance, baseline]"
    assert examples["train-2"].load_error == "empty dialogue act"
    assert "comment lines" in examples["dev-valid.json"].load_error
    assert examples["test-test.json"].load_error.startswith("malformed Wen file")


# ---------------------------------------------------------------- generic SPARQL JSON


@pytest.mark.parametrize("folder,fmt", [("lcquad1", "lcquad1"), ("lcquad2", "lcquad2"), ("qald", "qald")])
def test_sparql_json_detects_format(folder, fmt):
    path = next((FIXTURES / "sparql_json" / folder).glob("*train*.json"))
    assert sparql_json.detect_format(json.loads(path.read_text())) == sparql_json.PRESETS[fmt]


def test_sparql_json_lcquad():
    lc1 = _by_id(sparql_json.load(FIXTURES / "sparql_json" / "lcquad1"))
    assert set(lc1) == {"train-7101", "train-7102", "test-7201"}
    assert lc1["train-7101"].question == "How many novels did Ottoline Grieve write?"
    assert lc1["test-7201"].logical_form.startswith("ASK") and lc1["test-7201"].source == "lcquad1"
    lc2 = _by_id(sparql_json.load(FIXTURES / "sparql_json" / "lcquad2", "train"))
    assert lc2["train-50101"].logical_form.strip().startswith("select distinct ?obj where { wd:Q99990001")
    assert lc2["train-50102"].question is None and lc2["train-50103"].question is None  # null, "n/a"
    assert all(e.load_error is None for e in lc2.values())
    dbp = list(sparql_json.load(FIXTURES / "sparql_json" / "lcquad2", fmt=sparql_json.LCQUAD2_DBPEDIA))
    assert dbp[0].source == "lcquad2_dbpedia" and "wikidata.dbpedia.org" in dbp[0].logical_form


def test_sparql_json_qald():
    qald = _by_id(sparql_json.load(FIXTURES / "sparql_json" / "qald", source="qald9"))
    assert set(qald) == {"train-1", "train-2", "train-3", "test-1"}  # ids restart per split
    assert qald["train-1"].question == "Which languages are spoken in Norland?"  # the en entry
    assert qald["train-1"].answers[0] == "http://dbpedia.org/resource/Norlandic_language"
    assert qald["train-2"].answers == ["true"] and qald["test-1"].answers == ["4"]
    assert qald["train-3"].load_error == "no SPARQL at 'query.sparql'"
    assert {e.source for e in qald.values()} == {"qald9"}


def test_sparql_json_unknown_format_and_bad_file(tmp_path):
    (tmp_path / "train.json").write_text(json.dumps([{"q": "x"}]))
    with pytest.raises(ValueError, match="cannot detect"):
        list(sparql_json.load(tmp_path))
    (tmp_path / "train.json").write_text("[{")
    [bad] = sparql_json.load(tmp_path)
    assert bad.load_error.startswith("file is not JSON") and bad.raw == "[{"


# ---------------------------------------------------------------- registry


def test_registry_loads_every_dataset_from_the_fixtures():
    assert set(DATASETS) == {"webqsp", "wikisql", "cwq", "e2e", "e2e_plus", "wen2015_hotel", "wen2015_restaurant"}
    for name, spec in DATASETS.items():
        if name == "wikisql":
            _wikisql()
        examples = list(load_dataset(name, FIXTURES))
        assert examples and {e.source for e in examples} == {name}
        assert {e.lf_type for e in examples} == {spec.lf_type}
        assert {e.split for e in examples} <= set(spec.splits)
    [first, *_] = load_dataset("cwq", FIXTURES, "test")
    assert first.names  # names borrowed from the sibling webqsp/ folder
    e2e_dev = list(load_dataset("e2e", FIXTURES / "e2e", "dev"))  # a dataset's own folder works too
    assert len(e2e_dev) == 3


def test_registry_unknown_name_lists_known():
    with pytest.raises(ValueError, match="known datasets: cwq, e2e, e2e_plus"):
        load_dataset("spider", FIXTURES)


# ---------------------------------------------------------------- the real datasets

REAL_COUNTS = {  # shared/datasets/*/SOURCE.md
    "webqsp": {"train": 3453, "test": 1815},
    "wikisql": {"dev": 8421, "test": 15878},
    "cwq": {"test": 3531},
    "e2e": {"train": 42061, "dev": 4672, "test": 4693},
    "e2e_plus": {"dev": 4672, "test": 4693},
    "wen2015_hotel": {"train": 3223, "dev": 1075, "test": 1075},
    "wen2015_restaurant": {"train": 3114, "dev": 1039, "test": 1039},
}
_REAL = paths.datasets_dir()
real_data = pytest.mark.skipif(
    _REAL is None or not _REAL.is_dir(),
    reason=f"no real datasets: set ${paths.ENV_VAR} or place them at ../shared/datasets",
)


@lru_cache(maxsize=None)
def _real(name: str) -> tuple[RawExample, ...]:
    return tuple(load_dataset(name, _REAL))


@real_data
@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REAL_COUNTS))
def test_real_dataset_counts_ids_and_no_load_errors(name):
    if name == "wikisql":
        _wikisql()
    examples = _real(name)
    assert dict(Counter(e.split for e in examples)) == REAL_COUNTS[name]
    assert len({e.id for e in examples}) == len(examples)
    assert [(e.id, e.load_error) for e in examples if e.load_error] == []
    assert all(e.logical_form.strip() and e.question for e in examples)


@real_data
@pytest.mark.slow
def test_real_webqsp_partial_and_names():
    partial = list(webqsp.load_partial(_REAL / "webqsp"))
    assert Counter(e.split for e in partial) == {"train": 680, "test": 393}
    errors = Counter((e.split, e.load_error) for e in partial if e.load_error)
    assert errors == {("train", "no SPARQL parse (partial annotation)"): 660,
                      ("test", "no SPARQL parse (partial annotation)"): 377}
    full = _real("webqsp")
    assert not {e.id for e in partial} & {e.id for e in full}
    assert sum(e.logical_form.startswith("#MANUAL SPARQL") for e in full) == 105 + 42
    assert [e.id for e in full if not e.names] == ["WebQTrn-1466.P0"]  # the null TopicEntityMid


@real_data
@pytest.mark.slow
def test_real_cwq_seeds_and_names():
    examples = _real("cwq")
    seeds = Counter(json.loads(e.raw)["webqsp_ID"].split("-")[0] for e in examples)
    assert seeds == {"WebQTrn": 2328, "WebQTest": 1203}
    assert all(e.names for e in examples)  # every seed question is in WebQSP


@real_data
@pytest.mark.slow
def test_real_e2e_xz_matches_source_md():
    with lzma.open(_REAL / "e2e" / "trainset.csv.xz", "rt", encoding="utf-8", newline="") as handle:
        header = handle.readline()
    assert header.strip() == "mr,ref"
    assert len({e.logical_form for e in _real("e2e") if e.split == "train"}) == 4862
