"""``--split-by template``: templates abstract values and keep shapes, whole templates go to one split
in the fractions' proportions, and a split corpus's card makes ``datasets`` load its filled splits."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from test_synth_card_front_matter import corpus, front_matter  # noqa: F401 - the module's corpus fixture

from qgen.synth.template_split import SPLITS, assign_splits, lf_template, split_corpus


def test_templates_abstract_values_and_keep_shapes() -> None:
    a = lf_template("sql", 'SELECT "Nationality" FROM "table" WHERE "Player" = \'Terrence Ross\'')
    b = lf_template("sql", 'select "Nationality" from "table" where "Player" = \'Ann\'')
    c = lf_template("sql", 'SELECT "Nationality" FROM "table" WHERE "Pick" = 3')
    assert a == b == 'select "nationality" from "table" where "player" = <v>' and c != a
    berlin = lf_template("sparql", "SELECT ?x WHERE { dbr:Berlin dbo:leader ?x }")
    paris = lf_template("sparql", "SELECT ?x WHERE { <http://dbpedia.org/resource/Paris> dbo:leader ?x }")
    assert berlin == paris == "select ?x where { <e> dbo:leader ?x }"
    assert lf_template("sparql", 'SELECT ?x WHERE { ?x dbo:name "Bob"@en }') == \
        lf_template("sparql", 'SELECT ?x WHERE { ?x dbo:name "Al" }')
    assert lf_template("sparql", "not a query {") == "not a query {"  # its own template, never an error


def test_sql_conditions_anded_in_another_order_are_one_template() -> None:
    """Else one query shape lands in train and in test, as two templates."""
    first = lf_template("sql", 'SELECT "Visitors" FROM "festivals" WHERE "Festival" = \'A\' AND "Country" = \'B\'')
    second = lf_template("sql", 'SELECT "Visitors" FROM "festivals" WHERE "Country" = \'C\' AND "Festival" = \'D\'')
    assert first == second == 'select "visitors" from "festivals" where "country" = <v> and "festival" = <v>'
    ordered = lf_template("sql", 'SELECT "a" FROM "t" WHERE "c" = \'x\' AND "b" > 3 ORDER BY "d" DESC LIMIT 1')
    assert ordered == 'select "a" from "t" where "b" > <v> and "c" = <v> order by "d" desc limit <v>'
    either = 'SELECT "a" FROM "t" WHERE "c" = 1 OR "b" = 2 AND "d" = 3'  # OR binds looser: left as it is
    assert lf_template("sql", either) == 'select "a" from "t" where "c" = <v> or "b" = <v> and "d" = <v>'
    union = 'SELECT "a" FROM "t" WHERE "c" = 1 AND "b" = 2 UNION SELECT "a" FROM "u" WHERE "d" = 3'
    other = 'SELECT "a" FROM "t" WHERE "b" = 2 UNION SELECT "a" FROM "u" WHERE "d" = 3 AND "c" = 1'
    assert lf_template("sql", union) != lf_template("sql", other)  # c filters t in one, u in the other
    assert lf_template("sql", 'SELECT "a" FROM "t" WHERE "c" = 1 AND "b" = 2;') == \
        lf_template("sql", 'SELECT "a" FROM "t" WHERE "b" = 2 AND "c" = 1;')
    between = 'SELECT "a" FROM "t" WHERE "c" BETWEEN 1 AND 5 AND "b" = 2'  # its AND joins no conditions
    assert lf_template("sql", between) == 'select "a" from "t" where "c" between <v> and <v> and "b" = <v>'


def test_any_graphs_nodes_are_entities_its_predicates_and_classes_stay() -> None:
    """A graph of one's own (no known entity namespace): subjects, objects, IRIs in a FILTER or a VALUES block
    are the values that differ between queries of one shape; predicates, paths, classes, functions stay."""
    demo = "PREFIX s: <http://schema.org/> PREFIX d: <http://example.org/demo/> "
    lyon = lf_template("sparql", demo + "SELECT ?x WHERE { ?x a s:Person ; s:birthPlace d:Lyon . FILTER(?x != d:Ann) }")
    oslo = lf_template("sparql", demo + "SELECT ?x WHERE { ?x a s:Person ; s:birthPlace <http://example.org/demo/Oslo> . "
                                        "FILTER(?x != d:Bo) }")
    assert lyon == oslo and lyon.endswith("{ ?x a s:Person ; s:birthPlace <e> . filter ( ?x != <e> ) }")
    assert lyon != lf_template("sparql", demo + "SELECT ?x WHERE { ?x a s:Film ; s:birthPlace d:Lyon . FILTER(?x != d:Ann) }")
    path = lf_template("sparql", demo + "SELECT ?x WHERE { d:A s:country/s:capital ?x ; s:size ?n } "
                                        "ORDER BY DESC(xsd:integer(?n))")
    assert path.split("> ", 2)[2] == "select ?x where { <e> s:country / s:capital ?x ; s:size ?n } order by desc ( xsd:integer ( ?n ) )"
    values = lf_template("sparql", demo + "SELECT ?x WHERE { VALUES ?y { d:A d:B } ?x s:p ?y }")
    assert values.endswith("select ?x where { values ?y { <e> <e> } ?x s:p ?y }")


@pytest.mark.parametrize("query, template", [
    ("SELECT ?x WHERE { ?x ^s:parent d:Ann }", "{ ?x ^ s:parent <e> }"),
    ("SELECT ?x WHERE { ?x s:p/^s:q d:A }", "{ ?x s:p / ^ s:q <e> }"),
    ("SELECT ?x WHERE { ?x (s:parent|s:child) d:Ann ; s:c d:B }", "{ ?x ( s:parent | s:child ) <e> ; s:c <e> }"),
    ("SELECT ?x WHERE { ?x !s:parent d:Ann }", "{ ?x ! s:parent <e> }"),
    ("SELECT ?x WHERE { ?x s:p d:A . FILTER(EXISTS { ?y s:q d:B }) }",
     "{ ?x s:p <e> . filter ( exists { ?y s:q <e> } ) }"),
    ('SELECT ?x WHERE { ?x s:n "1"^^xsd:integer }', "{ ?x s:n <v> ^^ xsd:integer }"),  # a datatype stays
    ("SELECT ?x FROM d:g0 WHERE { GRAPH d:g1 { ?x s:p d:A } }", "from d:g0 where { graph d:g1 { ?x s:p <e> } }"),
    ("SELECT ?x WHERE { { SELECT ?y WHERE { d:A s:p ?y } } ?x s:q [ s:r d:B ] }",
     "{ { select ?y where { <e> s:p ?y } } ?x s:q [ s:r <e> ] }"),
])
def test_paths_groups_datatypes_and_graphs_are_read_as_what_they_are(query: str, template: str) -> None:
    demo = "PREFIX s: <http://schema.org/> PREFIX d: <http://example.org/demo/> "
    assert lf_template("sparql", demo + query).endswith(template)


def test_whole_templates_go_to_one_split_near_the_fractions() -> None:
    templates = [f"t{i % 50}" for i in range(1000)]  # 50 templates of 20 pairs each
    splits = assign_splits(templates, (0.8, 0.1, 0.1), seed=3)
    by_template = {}
    for template, split in zip(templates, splits):
        assert by_template.setdefault(template, split) == split
    sizes = {name: splits.count(name) for name in SPLITS}
    assert sizes == {"train": 800, "validation": 100, "test": 100}
    assert splits == assign_splits(templates, (0.8, 0.1, 0.1), seed=3)  # seeded
    assert splits != assign_splits(templates, (0.8, 0.1, 0.1), seed=4)
    with pytest.raises(ValueError, match="summing to 1"):
        assign_splits(templates, (0.8, 0.1))


def test_templates_dealt_before_keep_their_split_when_more_come() -> None:
    old = [f"t{i}" for i in range(40) for _ in range(3)]
    grown = old + [f"t{i}" for i in range(40, 48) for _ in range(3)]
    before = assign_splits(old, seed=1)
    after = assign_splits(grown, seed=1, fixed=dict(zip(old, before)))
    assert after[: len(old)] == before
    assert {after[i] for i in range(len(old), len(grown))} <= set(SPLITS)
    assert assign_splits(grown, seed=1) != after  # dealt afresh, old templates would have moved


def test_a_split_corpus_loads_its_filled_splits_that_share_no_template(corpus: Path, tmp_path: Path) -> None:  # noqa: F811
    """The fixture corpus holds two templates: dealt whole, one fills train and one validation, test is left
    empty; the card lists, and ``datasets`` loads, the two filled splits only."""
    copy = tmp_path / "corpus"
    shutil.copytree(corpus, copy)
    summary = split_corpus(copy, fractions=(0.6, 0.2, 0.2), seed=1)
    manifest = json.loads((copy / "manifest.json").read_text())
    assert manifest["splits"] == summary and list(summary["splits"]) == list(SPLITS)
    ids, seen = [], {}
    for name in SPLITS:
        table = pq.read_table(copy / "splits" / f"{name}.parquet")
        assert table.num_rows == summary["splits"][name]["pairs"]
        ids += table.column("id").to_pylist()
        for lf_type, lf in zip(table.column("lf_type").to_pylist(), table.column("logical_form").to_pylist()):
            assert seen.setdefault(lf_template(lf_type, lf), name) == name
    assert sorted(ids) == sorted(pq.read_table(copy / "pairs").column("id").to_pylist())  # a partition
    assert sorted(pq.read_table(copy / "splits").column("id").to_pylist()) == sorted(ids)  # a folder of Parquet only
    meta, body = front_matter((copy / "README.md").read_text())
    pairs_config = next(c for c in meta["configs"] if c["config_name"] == "pairs")
    filled = [name for name in SPLITS if summary["splits"][name]["pairs"]]
    assert len(set(seen)) == 2 and filled == ["train", "validation"]
    assert [summary["splits"][name]["templates"] for name in SPLITS] == [1, 1, 0]
    assert [f["split"] for f in pairs_config["data_files"]] == filled
    assert "share no" in body or "no template" in body
    datasets = pytest.importorskip("datasets")
    loaded = datasets.load_dataset(str(copy), cache_dir=str(tmp_path / "hf"))
    assert {name: loaded[name].num_rows for name in loaded} == {n: summary["splits"][n]["pairs"] for n in filled}
    with pytest.raises(ValueError, match="not a finished corpus"):
        split_corpus(tmp_path)


def test_splitting_refuses_a_corpus_another_run_holds(corpus: Path, tmp_path: Path,  # noqa: F811
                                                      folder_lock_holder) -> None:
    """The split writes the manifest and card of a corpus folder: it holds the folder's lock as synthesis
    does, so a run claiming the folder meanwhile cannot delete its half-written files as leftovers."""
    from qgen.synth.corpus import CorpusError

    copy = tmp_path / "corpus"
    shutil.copytree(corpus, copy)
    before = (copy / "manifest.json").read_text()
    with folder_lock_holder(copy) as holder:
        with pytest.raises(CorpusError, match=f"is already being written by PID {holder}"):
            split_corpus(copy)
    assert (copy / "manifest.json").read_text() == before and not (copy / "splits").exists()
    assert split_corpus(copy)["splits"]  # the holder is gone: the corpus splits


def test_splitting_never_writes_through_a_planted_splits_link(corpus: Path, tmp_path: Path) -> None:  # noqa: F811
    from qgen.synth.corpus import CorpusError

    copy, victim = tmp_path / "corpus", tmp_path / "victim"
    shutil.copytree(corpus, copy)
    victim.mkdir()
    (copy / "splits").symlink_to(victim, target_is_directory=True)
    with pytest.raises(CorpusError, match="splits is a symbolic link"):
        split_corpus(copy)
    assert not list(victim.iterdir())

