"""Template augmentation: seed questions with their said parts cut out, filled by other logical forms."""
from qgen.data import Pair
from qgen.seed_templates import augment, parts, template


def _pair(pair_id: str, lf: str, question: str = "", group: str = "t") -> Pair:
    return Pair(pair_id, lf.split(), question.split(), group)


NATIONALITY = _pair("s1", "select nationality from table where player = ' terrence ross '",
                    "what is terrence ross ' nationality")


def test_parts_split_syntax_from_columns_and_values():
    shape, found = parts("select count ( no ) from table where pole position = ' kevin curtain '".split())
    assert shape == ("select", "count", "(", "<part>", ")", "from", "<part>", "where", "<part>", "=", "'", "<part>",
                     "'")
    assert found == [("no",), ("table",), ("pole", "position"), ("kevin", "curtain")]


def test_a_template_cuts_out_the_said_parts_and_keeps_the_unsaid_ones():
    made = template(NATIONALITY)
    assert made.pieces == (("what", "is"), 3, ("'",), 0)
    assert made.fixed == (None, ("table",), ("player",), None)
    assert made.seed_id == "s1"


def test_a_form_of_the_same_shape_fills_the_template():
    form = _pair("u1", "select position from table where player = ' bob smith '", "unused words", "t9")
    [filled] = augment([NATIONALITY], [form])
    assert filled == Pair("u1", form.src, "what is bob smith ' position".split(), "t9")


def test_an_unsaid_part_must_be_the_same_in_the_form():
    # "player" is not said: the template reads "the player's", so a form over another column does not fit
    other_column = _pair("u2", "select position from table where college = ' duke '")
    other_shape = _pair("u3", "select count ( position ) from table where player = ' bob smith '")
    assert augment([NATIONALITY], [other_column, other_shape]) == []


def test_no_template_from_a_part_said_in_part_or_twice_or_not_at_all():
    in_part = _pair("s2", "select school / club team from table where years in toronto = ' 1995-96 '",
                    "which club was in toronto 1995-96")
    twice = _pair("s3", "select pick from table where player = ' ross '", "what pick was ross , ross ?")
    nothing_said = _pair("s4", "select round from table where circuit = ' assen '", "when was it held ?")
    assert [template(p) for p in (in_part, twice, nothing_said)] == [None, None, None]


def test_function_words_shared_with_an_unsaid_part_do_not_spoil_the_template():
    seed = _pair("s5", "select date from table where venue of the game = ' misano '", "what was the date in misano ?")
    assert template(seed).fixed[2] == ("venue", "of", "the", "game")
    form = _pair("u4", "select score from table where venue of the game = ' assen '")
    assert augment([seed], [form])[0].tgt == "what was the score in assen ?".split()


def test_each_form_gets_one_of_the_fitting_templates_and_the_draw_follows_the_seed():
    other = _pair("s6", "select nationality from table where player = ' jalen rose '",
                  "which nationality does jalen rose have ?")
    forms = [_pair(f"u{i}", f"select position from table where player = ' p{i} '") for i in range(40)]
    first, again = augment([NATIONALITY, other], forms, seed=3), augment([NATIONALITY, other], forms, seed=3)
    assert first == again and len(first) == 40
    starts = {tuple(p.tgt[:2]) for p in first}
    assert starts == {("what", "is"), ("which", "position")}
    assert augment([NATIONALITY, other], forms, seed=4) != first


def test_keywords_inside_a_column_name_or_a_quoted_value_stay_in_their_part():
    shape, found = parts("select count ( zebra count ) from table where years in toronto = ' and in the air '".split())
    assert found == [("zebra", "count"), ("table",), ("years", "in", "toronto"), ("and", "in", "the", "air")]
    assert shape.count("<part>") == 4 and shape[:3] == ("select", "count", "(")
