"""Seed 002's benchmark end to end at toy size on a made-up Hotel folder: rows, selection, test
outputs and the results files; and the real splits' sizes where the datasets are."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from qgen.char_benchmark import CharBenchConfig, run_char_benchmark
from qgen.datasets.char_d2t import ascii_fold, read_split, to_pairs


def write_hotel(root: Path) -> Path:
    folder = root / "wen2015_sf" / "roberti_e2e_format"
    folder.mkdir(parents=True)
    names = ["aria", "bel air", "cova", "dune", "elm inn", "fig"]
    for split, picked in (("train", names), ("dev", names[:3]), ("test", names[3:])):
        rows = ['"area[dropped]","the first line, which the loader drops."']
        rows += [f'"name[{n}]","{n} is a hotel."' for n in picked] + [f'"name[{n}]","the {n} hotel."' for n in picked]
        (folder / f"hotel_{split}.csv").write_text("\n".join(rows) + "\n")
    return root


def test_reading_drops_the_first_line_folds_to_ascii_and_groups_by_mr(tmp_path: Path) -> None:
    split = read_split(write_hotel(tmp_path), "hotel", "dev")
    assert len(split.rows) == 6 and split.mrs == ("name[aria]", "name[bel air]", "name[cova]")
    assert split.references[0] == ("aria is a hotel.", "the aria hotel.")
    pairs = to_pairs(split, "dev")
    assert pairs[0].src[0] == "<s>" and pairs[0].src[-1] == "</s>" and "".join(pairs[0].src[1:-1]) == "name[aria]"
    assert ascii_fold("£20 café") == "L20 cafe"


def test_a_bad_row_names_the_file_and_line(tmp_path: Path) -> None:
    root = write_hotel(tmp_path)
    path = root / "wen2015_sf" / "roberti_e2e_format" / "hotel_test.csv"
    path.write_text(path.read_text() + '"name[x]"\n')
    with pytest.raises(ValueError, match=r"hotel_test.csv: line 8 is not one MR and one reference"):
        read_split(root, "hotel", "test")


def test_the_benchmark_trains_selects_decodes_and_writes_its_table(tmp_path: Path) -> None:
    cfg = CharBenchConfig(epochs=2, patience=1, batch_size=4, learning_rate=1e-2, hidden=16, layers=1,
                          java_metrics=False, device="cpu")
    readme = run_char_benchmark("hotel", ["roberti_eda_c"], cfg, tmp_path / "work", tmp_path / "results",
                                write_hotel(tmp_path / "data"), log=lambda _: None)
    report = json.loads((readme.parent / "metrics.json").read_text())
    entry = report["rows"]["roberti_eda_c"]
    assert report["dataset"] == "hotel" and set(report["rows"]) == {"roberti_eda_c"}
    assert entry["selected_epoch"] in (1, 2) and entry["config"]["epochs"] == 2 and entry["commit"] and entry["command"]
    assert 0.0 <= entry["test"]["BLEU"] <= 1.0 and entry["test"]["METEOR"] is None
    lines = (readme.parent / "roberti_eda_c_test.tsv").read_text().splitlines()
    assert lines[0] == "MR\toutput" and [line.split("\t")[0] for line in lines[1:]] == [
        "name[dune]", "name[elm inn]", "name[fig]"]
    text = readme.read_text()
    assert "| roberti_eda_c | ours | folded |" in text and "| | paper | folded | 0.4316" not in text
    with pytest.raises(ValueError, match="unknown row"):
        run_char_benchmark("hotel", ["eda_x"], cfg, tmp_path / "work", tmp_path / "results", tmp_path / "data")


@pytest.mark.slow
def test_the_real_splits_have_the_papers_sizes(shared_datasets: Path) -> None:
    sizes = {d: [len(read_split(shared_datasets, d, s).rows) for s in ("train", "dev", "test")]
             for d in ("hotel", "restaurant")}
    assert sizes == {"hotel": [2210, 275, 275], "restaurant": [2874, 358, 358]}


def test_the_transfer_row_starts_from_the_e2e_plus_run(tmp_path: Path) -> None:
    import shutil

    cfg = CharBenchConfig(epochs=1, patience=1, batch_size=4, learning_rate=1e-2, hidden=16, layers=1,
                          java_metrics=False, device="cpu")
    data, work = write_hotel(tmp_path / "data"), tmp_path / "work"
    with pytest.raises(FileNotFoundError, match="qgen benchmark e2e-plus --models roberti_eda_cs --seed 1 first"):
        run_char_benchmark("hotel", ["roberti_eda_cs_tl"], cfg, work, tmp_path / "results", data)
    with pytest.raises(ValueError, match="on E2E\\+ itself"):
        run_char_benchmark("e2e_plus", ["roberti_eda_cs_tl"], cfg, work, tmp_path / "results", data)
    run_char_benchmark("hotel", ["roberti_eda_cs"], cfg, work, tmp_path / "results", data, log=lambda _: None)
    source = work / "e2e_plus" / "roberti_eda_cs_seed1"  # stands in for the E2E+ run
    source.mkdir(parents=True)
    shutil.copyfile(work / "hotel" / "roberti_eda_cs_seed1" / "best_bleu.pt", source / "best_bleu.pt")
    said: list[str] = []
    readme = run_char_benchmark("hotel", ["roberti_eda_cs_tl"], cfg, work, tmp_path / "results", data, log=said.append)
    assert any(f"initialised from {source / 'best_bleu.pt'}" in line for line in said)
    report = json.loads((readme.parent / "metrics.json").read_text())
    assert set(report["rows"]) == {"roberti_eda_cs", "roberti_eda_cs_tl"}  # rows accumulate across runs
    assert "| | paper | folded | 0.5769 |" in readme.read_text() and "| roberti_eda_cs | ours |" in readme.read_text()


def test_the_rebuilt_e2e_plus_train_replaces_values_per_mr_and_keeps_the_lists_apart() -> None:
    from qgen.datasets.char_d2t import CharSplit
    from qgen.datasets.e2e_plus_train import rebuild, slot_values, value_lists

    rows = (("name[Aromi], food[Indian], near[The Rice Boat]", "Aromi serves Indian food near The Rice Boat."),
            ("name[Aromi], food[Indian], near[The Rice Boat]", "Near The Rice Boat, Aromi is Indian."),
            ("name[Zizzi], near[Aromi]", "Zizzi is near Aromi."))
    train = CharSplit(rows, (rows[0][0], rows[2][0]), ((rows[0][1], rows[1][1]), (rows[2][1],)))
    taken = slot_values([r[0] for r in rows] + ["name[Cotto], food[Peruvian]"])
    lists = value_lists(taken)
    assert not set(lists["name"]) & set(lists["near"]) and "Peruvian" not in lists["food"]
    assert not (set(lists["name"]) | set(lists["near"]) | set(lists["food"])) & set().union(*taken.values())
    rebuilt = rebuild(train, lists)
    assert len(rebuilt.rows) == 3 and rebuilt.rows[0][0] == rebuilt.rows[1][0]  # one replacement per MR
    new = slot_values(rebuilt.mrs)
    for slot, value in (("name", "Aromi"), ("food", "Indian"), ("near", "The Rice Boat")):
        assert value not in new[slot]
    mr, ref = rebuilt.rows[0]
    name = mr.split("name[")[1].split("]")[0]
    assert name in lists["name"] and ref.startswith(name) and "Aromi" not in ref
    assert rebuild(train, lists) == rebuilt  # seeded


@pytest.mark.slow
def test_the_rebuilt_e2e_plus_train_is_disjoint_from_every_published_value(shared_datasets: Path) -> None:
    from qgen.datasets.e2e_plus_train import slot_values

    train = read_split(shared_datasets, "e2e_plus", "train")
    assert len(train.rows) == 42061
    ours = slot_values(train.mrs)
    published = slot_values([mr for d, s in (("e2e", "train"), ("e2e", "test"), ("e2e_plus", "dev"), ("e2e_plus", "test"))
                             for mr in read_split(shared_datasets, d, s).mrs])
    assert not set().union(*ours.values()) & set().union(*published.values())
    assert not ours["name"] & ours["near"]


def test_a_rows_time_budget_counts_every_start_and_stops_within_an_epoch(tmp_path: Path,
                                                                        training_budgets: list) -> None:
    """--max-seconds is the row's training time over every start: each call to train gets what is left
    (train stops within an epoch when it is spent, resumable), not the whole budget again."""
    data, work = write_hotel(tmp_path / "data"), tmp_path / "work"
    state = work / "hotel" / "roberti_eda_c_seed1" / "selection.json"
    spent = []
    for epochs in (1, 2):  # a run started again for one more epoch
        cfg = CharBenchConfig(epochs=epochs, batch_size=4, learning_rate=1e-2, hidden=16, layers=1, java_metrics=False,
                              device="cpu", max_seconds=1000.0)
        run_char_benchmark("hotel", ["roberti_eda_c"], cfg, work, tmp_path / "results", data, log=lambda _: None)
        spent.append(json.loads(state.read_text())["train_seconds"])
    # the second start: the first epoch's time taken off
    assert training_budgets == [1000.0, pytest.approx(1000.0 - spent[0])]
    assert 0 < spent[0] < spent[1]


def test_the_command_says_a_first_epoch_cut_by_the_budget_is_resumable(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import qgen.char_benchmark
    from qgen.cli import app
    from qgen.dev_selection import NoEpochScored

    def stopped(*args, **kwargs):
        raise NoEpochScored("out/hotel/roberti_eda_cs_seed1: no epoch was scored on dev")

    monkeypatch.setattr(qgen.char_benchmark, "run_char_benchmark", stopped)
    result = CliRunner().invoke(app, ["benchmark", "hotel-char", "--max-seconds", "60", "--work-dir", str(tmp_path),
                                      "--results", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("stopped (the rows finished before it are written): out/hotel/roberti_eda_cs_seed1")
