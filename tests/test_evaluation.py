"""`bertkit evaluate` (bertkit/evaluation.py): what it says about the data it is given."""

import pytest


@pytest.mark.slow
def test_evaluate_on_missing_columns_names_the_option_to_set(cli, tmp_path, classify_bundle):
    from helpers.checks import assert_refused

    data = tmp_path / "d.csv"
    data.write_text("sentence,label\ngood,positive\n")
    code, _, err = cli("evaluate", "-m", classify_bundle, "-d", data, "-o", tmp_path / "ev")
    assert_refused(code, err, "no column 'text' (set by --text-column)")
